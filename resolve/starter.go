package resolve

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/oa-dev/oa/blocking"
)

// SandboxConnector is the canonical id the starter registry gives the
// built-in sandbox records connector.
const SandboxConnector = "sandbox.records"

// StarterRegistry renders a starter capability registry for host: the
// record capabilities of the clinic example, performed by the built-in
// sandbox records connector.
func StarterRegistry(host string) string {
	return fmt.Sprintf(`package host

// Written by `+"`oa registry init`"+`. Review it, then sign it with
// `+"`oa registry sign --as NAME`"+`; an unsigned or edited registry is refused.
host: %q

capabilities: {
	"records.read": {
		risk:        "read_only"
		description: "Read one record with its status and notes."
	}
	"records.note.append": {
		risk:        "consequential"
		description: "Append one note to a record."
	}
}

connectors: {
	%q: {
		// Other names for the sandbox; a binding never accepts them.
		aliases: ["records-sandbox"]
		availability: "available"
	}
}

tools: [
	{name: "read_record", connector: %[2]q, capability: "records.read", risk: "read_only", enabled: true},
	{name: "append_note", connector: %[2]q, capability: "records.note.append", risk: "consequential", enabled: true},
]
`, host, SandboxConnector)
}

// InitRegistry writes the starter registry to home's registry file. It
// never overwrites one.
func InitRegistry(home, host string) (string, error) {
	path := filepath.Join(home, RegistryFile)
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		return path, blocking.New(blocking.HostExists, "%s exists under the host folder", RegistryFile)
	}
	if err := os.WriteFile(path, []byte(StarterRegistry(host)), 0o644); err != nil {
		return path, err
	}
	_, err := LoadRegistry(path)
	return path, err
}
