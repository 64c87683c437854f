package harness

import (
	"bytes"
	"testing"
)

// TestInstallUninstallGivesTheFileBack: for every client, putting the
// entry into a file that does not hold it and removing it again (with the
// gap the install record keeps) gives the file back byte for byte: an
// empty servers container written compactly or spaced, an empty
// top-level object, a container beside other settings, and for TOML a
// file whose last line is not ended, or that ends in blank lines.
func TestInstallUninstallGivesTheFileBack(t *testing.T) {
	jsonFiles := []string{
		`{"mcpServers":{}}`, `{}`, `{"mcpServers": {}, "x": 1}`, "{\n  \"mcpServers\": {}\n}\n", "{ }", "{\n}\n",
		"{\"mcpServers\":{ }}", "{\"mcpServers\": {\n  }\n}", "{\"x\": 1}\n", "{\"mcpServers\": {\"other\": {\"command\": \"o\"}}}",
		"// settings\n{\"mcpServers\": {} // none yet\n}\n",
	}
	tomlFiles := []string{"model = \"o3\"", "model = \"o3\"\n", "model = \"o3\"\n\n", "\n\n", " ", "[mcp_servers.other]\ncommand = \"o\"\n"}
	for _, client := range Clients {
		f := clientSpecs[client].format
		files := jsonFiles
		if _, ok := f.(tomlFormat); ok {
			files = tomlFiles
		}
		if client == ClientVSCode || client == ClientZed {
			files = nil
			key := f.(jsonFormat).key
			for _, in := range jsonFiles {
				files = append(files, string(bytes.ReplaceAll([]byte(in), []byte("mcpServers"), []byte(key))))
			}
		}
		for _, in := range files {
			gap := f.gap("/f", []byte(in), "oa-clinic")
			out, added, err := f.put("/f", []byte(in), "oa-clinic", goldenEntry)
			if err != nil {
				t.Fatalf("%s: put into %q: %v", client, in, err)
			}
			back, _, err := f.remove("/f", out, "oa-clinic", added, gap)
			if err != nil || string(back) != in {
				t.Errorf("%s: install then uninstall of %q gives %q (%v)", client, in, back, err)
			}
		}
	}
}
