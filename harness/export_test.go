package harness

// UseLegacySkills makes m write its skill folder where the client's
// earlier layout put it (Codex's $CODEX_HOME/skills), so a test can make
// an installation of that layout; the returned function undoes it.
func UseLegacySkills(m *MCPClient) (undo func()) {
	skills, home := m.spec.skills, m.home
	m.spec.skills, m.home = m.spec.legacySkills, ""
	return func() { m.spec.skills, m.home = skills, home }
}
