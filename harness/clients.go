package harness

import (
	"errors"
	"path/filepath"
	"runtime"
)

// Clients an MCPClient installs into.
const (
	// ClientClaudeCode is Claude Code: the server entry is merged into the
	// project's .mcp.json and the skill goes to .claude/skills/<package>.
	ClientClaudeCode = "claude-code"
	// ClientClaudeDesktop is the Claude desktop app: its per-user
	// claude_desktop_config.json (mcpServers); it reads no skill folder.
	ClientClaudeDesktop = "claude-desktop"
	// ClientCursor is Cursor: the project's .cursor/mcp.json (mcpServers)
	// and .cursor/skills.
	ClientCursor = "cursor"
	// ClientVSCode is Visual Studio Code (GitHub Copilot): the project's
	// .vscode/mcp.json (servers, "type": "stdio", JSON with comments) and
	// .github/skills.
	ClientVSCode = "vscode"
	// ClientCodex is OpenAI Codex: [mcp_servers.NAME] in
	// $CODEX_HOME/config.toml (default ~/.codex) and the skill in the
	// user's ~/.agents/skills; with a project folder (Dir), the project's
	// .codex/config.toml and .agents/skills. An installation of the
	// earlier layout, its skill in $CODEX_HOME/skills, is still read and
	// removed.
	ClientCodex = "codex"
	// ClientGeminiCLI is Gemini CLI: the project's .gemini/settings.json
	// (mcpServers) and .gemini/skills.
	ClientGeminiCLI = "gemini-cli"
	// ClientWindsurf is Windsurf: the per-user
	// ~/.codeium/windsurf/mcp_config.json (mcpServers) and its skills
	// folder.
	ClientWindsurf = "windsurf"
	// ClientZed is Zed: context_servers in the project's .zed/settings.json
	// (JSON with comments), each entry flat command/args/env as Zed's
	// current documentation shows it; an entry of the 2025 form (with
	// "source": "custom") is still read. It reads no skill folder.
	ClientZed = "zed"
	// ClientGeneric is any MCP client: a standalone server file and a
	// projection folder to point the client at.
	ClientGeneric = "generic"
)

// Clients lists the clients MCPClient knows, in the order shown to people.
var Clients = []string{ClientClaudeCode, ClientClaudeDesktop, ClientCursor, ClientVSCode, ClientCodex, ClientGeminiCLI, ClientWindsurf, ClientZed, ClientGeneric}

// clientSpec is where one client reads its MCP servers and skills.
type clientSpec struct {
	// userRoot, when set, makes the client user-level: it returns the
	// client's own configuration folder, and every path below is relative
	// to it. Otherwise the client is project-level and they are relative
	// to the project folder (MCPClientOptions.Dir).
	userRoot func(env clientEnv) (string, error)
	// serverFile is the configuration file; format edits it.
	serverFile string
	format     configFormat
	// oaDir holds the projection and install records.
	oaDir string
	// skills, when set, is the folder the client reads Agent Skills from;
	// one starting with "~/" is under the user's home folder instead.
	skills string
	// legacySkills, when set, is the skills folder of an earlier layout:
	// an installation recorded there is still read, removed by uninstall
	// and moved to skills by installing again.
	legacySkills string
	// project, when set, is the client's layout in a project folder: a
	// user-level client that also reads a project's configuration uses it
	// when a project folder (MCPClientOptions.Dir) is given.
	project *clientSpec
}

// homePrefix starts a layout path under the user's home folder rather
// than under the install root.
const homePrefix = "~/"

var mcpServers = jsonFormat{key: "mcpServers"}

// codexSpec is Codex's: $CODEX_HOME/config.toml and ~/.agents/skills per
// user, or a project's .codex/config.toml and .agents/skills.
var codexSpec = clientSpec{userRoot: codexRoot, serverFile: "config.toml", format: tomlFormat{table: "mcp_servers"}, oaDir: "oa", skills: homePrefix + ".agents/skills", legacySkills: "skills",
	project: &clientSpec{serverFile: ".codex/config.toml", format: tomlFormat{table: "mcp_servers"}, oaDir: ".codex/oa", skills: ".agents/skills"}}

var clientSpecs = map[string]clientSpec{
	ClientClaudeCode:    {serverFile: ".mcp.json", format: mcpServers, oaDir: ".claude/oa", skills: ".claude/skills"},
	ClientClaudeDesktop: {userRoot: claudeDesktopRoot, serverFile: "claude_desktop_config.json", format: mcpServers, oaDir: "oa"},
	ClientCursor:        {serverFile: ".cursor/mcp.json", format: mcpServers, oaDir: ".cursor/oa", skills: ".cursor/skills"},
	ClientVSCode:        {serverFile: ".vscode/mcp.json", format: jsonFormat{key: "servers", fixed: [][2]string{{"type", "stdio"}}}, oaDir: ".vscode/oa", skills: ".github/skills"},
	ClientCodex:         codexSpec,
	ClientGeminiCLI:     {serverFile: ".gemini/settings.json", format: mcpServers, oaDir: ".gemini/oa", skills: ".gemini/skills"},
	ClientWindsurf:      {userRoot: windsurfRoot, serverFile: "mcp_config.json", format: mcpServers, oaDir: "oa", skills: "skills"},
	ClientZed:           {serverFile: ".zed/settings.json", format: jsonFormat{key: "context_servers", accepted: [][2]string{{"source", "custom"}}}, oaDir: ".zed/oa"},
	ClientGeneric:       {format: mcpServers},
}

// UserLevel reports whether client is configured per user by default (its
// files are under the user's home, not under a project folder).
func UserLevel(client string) bool { return clientSpecs[client].userRoot != nil }

// ProjectLevel reports whether client can be installed into a project
// folder (MCPClientOptions.Dir): every project-level client, and a
// user-level one that also reads a project's configuration (Codex's
// .codex/config.toml).
func ProjectLevel(client string) bool {
	s, ok := clientSpecs[client]
	return ok && (s.userRoot == nil || s.project != nil)
}

// clientEnv is what the per-user paths are computed from.
type clientEnv struct {
	getenv func(string) string
	goos   string
}

// home is the user's home folder: USERPROFILE on Windows, else HOME.
func (e clientEnv) home() (string, error) {
	h := e.getenv("HOME")
	if e.goos == "windows" {
		h = e.getenv("USERPROFILE")
	}
	if h == "" || !filepath.IsAbs(h) {
		return "", errors.New("harness: the user's home folder is not set (HOME, or USERPROFILE on Windows)")
	}
	return h, nil
}

// claudeDesktopRoot is ~/Library/Application Support/Claude on macOS,
// %APPDATA%\Claude on Windows, and $XDG_CONFIG_HOME/Claude (default
// ~/.config/Claude) elsewhere.
func claudeDesktopRoot(e clientEnv) (string, error) {
	switch e.goos {
	case "windows":
		if a := e.getenv("APPDATA"); a != "" {
			return filepath.Join(a, "Claude"), nil
		}
	case "darwin":
		h, err := e.home()
		return filepath.Join(h, "Library", "Application Support", "Claude"), err
	default:
		if x := e.getenv("XDG_CONFIG_HOME"); filepath.IsAbs(x) {
			return filepath.Join(x, "Claude"), nil
		}
	}
	h, err := e.home()
	if e.goos == "windows" {
		return filepath.Join(h, "AppData", "Roaming", "Claude"), err
	}
	return filepath.Join(h, ".config", "Claude"), err
}

// codexRoot is $CODEX_HOME, else ~/.codex.
func codexRoot(e clientEnv) (string, error) {
	if c := e.getenv("CODEX_HOME"); c != "" {
		return filepath.Abs(c)
	}
	h, err := e.home()
	return filepath.Join(h, ".codex"), err
}

// windsurfRoot is ~/.codeium/windsurf (%USERPROFILE%\.codeium\windsurf).
func windsurfRoot(e clientEnv) (string, error) {
	h, err := e.home()
	return filepath.Join(h, ".codeium", "windsurf"), err
}

func defaultGOOS(goos string) string {
	if goos == "" {
		return runtime.GOOS
	}
	return goos
}
