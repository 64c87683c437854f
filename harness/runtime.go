// Package harness is the harness runtime port: the four operations through
// which oa deals with a harness, the program that owns a native agent
// session (the model loop). It installs a bound deployment into a client
// and reads back what happened; it never advances work, authorizes an
// effect or declares an outcome — only the coordinator does.
//
//   - Inspect reports what is installed in the client and whether it still
//     matches the deployment's binding.
//   - Prepare installs the bound deployment into the client.
//   - Transcript lists the deployment's runs from the host's store.
//   - RunTurn runs one model turn, where the harness can.
//
// MCPClient is the harness of an MCP client (Claude Code, or any generic
// client): Prepare writes the client's MCP server entry for
// `oa coordinator serve --deployment NAME`, the projection of the bound
// release (projection.Project) with its Agent Skills folder, and an install
// record; Inspect compares all three with the binding. The client owns its
// model loop, so RunTurn refuses with harness_turn_unsupported.
//
// The package lives apart from projection so that it may use bind (which
// comes after the projection) without a cycle; it never imports the
// coordinator, and reads run records from the store read-only.
//
// Clients (clients.go) each have their config file, key, skill folder and
// per-user paths. Prepare merges the oa-<deployment> entry into the
// client's own file (configjson.go through hujson, comments kept;
// configtoml.go table by table through go-toml's parser); every edit is
// re-parsed and compared before an atomic write. Uninstall removes exactly
// what the install wrote. Transcript lists the deployment's runs read-only
// and leak-free.
package harness

import (
	"context"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/contract"
)

// Runtime is the harness runtime port: one kind of harness, seen through
// four operations. Every refusal is a blocking error (exit status 2);
// any other error is a fault.
type Runtime interface {
	// Kind names the harness, such as "mcp-client/claude-code".
	Kind() string
	// Inspect reports what of the deployment is installed in the harness
	// and whether it matches the deployment's current binding. A mismatch
	// is not an error: it is a failed Check, and Installation.Err says so.
	Inspect(ctx context.Context, deployment string) (*Installation, error)
	// Prepare installs the deployment, which must have a verified binding
	// whose release is actively admitted, and returns the inspection of
	// the result.
	Prepare(ctx context.Context, deployment string) (*Installation, error)
	// Transcript returns the deployment's runs, oldest first; with limit
	// > 0 only the latest limit of them. It never carries an input value
	// or anything read downstream.
	Transcript(ctx context.Context, deployment string, limit int) ([]TurnRecord, error)
	// RunTurn runs one model turn with prompt, where the harness owns a
	// model loop oa can drive.
	RunTurn(ctx context.Context, deployment, prompt string) error
}

// Check is one comparison Inspect made.
type Check struct {
	// Name is what was compared: binding, admission, record,
	// server_entry, settings, files, projection or binding_link.
	Name string `json:"name"`
	// OK is true when the check passed.
	OK bool `json:"ok"`
	// Code and Detail say why a failed check failed. Detail holds names,
	// counts and, for files, the installed files' paths relative to the
	// install folder: never an observed value, a secret or an absolute
	// path.
	Code   blocking.Code `json:"code,omitempty"`
	Detail string        `json:"detail,omitempty"`
}

// Checks Inspect makes, in order.
const (
	CheckBinding     = "binding"
	CheckAdmission   = "admission"
	CheckRecord      = "record"
	CheckServerEntry = "server_entry"
	CheckFiles       = "files"
	CheckProjection  = "projection"
	CheckBindingLink = "binding_link"
)

// Bound is what the deployment's current binding says the installation
// must be.
type Bound struct {
	BindingSeq            int64  `json:"bindingSeq"`
	PlanDigest            string `json:"planDigest"`
	Package               string `json:"package"`
	Version               string `json:"version"`
	ArtifactDigest        string `json:"artifactDigest"`
	Model                 string `json:"model"`
	MaterializationDigest string `json:"materializationDigest"`
	PersonaDigest         string `json:"personaDigest"`
	SkillDigest           string `json:"skillDigest"`
}

// Installation is what Inspect found.
type Installation struct {
	// Kind is the Runtime's kind; Client the MCP client.
	Kind       string `json:"kind"`
	Client     string `json:"client"`
	Deployment string `json:"deployment"`
	// Dir is the folder installed into (operator output only).
	Dir string `json:"dir"`
	// RecordFile is where the install record is, relative to Dir.
	RecordFile string `json:"recordFile"`
	// Installed is true when an install record was found.
	Installed bool `json:"installed"`
	// Record is the install record, when one was read.
	Record *Record `json:"record,omitempty"`
	// Bound is the current binding, when it verifies.
	Bound *Bound `json:"bound,omitempty"`
	// Decider is who answers at the installation, when it was installed
	// for a person.
	Decider *Decider `json:"decider,omitempty"`
	// Matches is true only when every check passed.
	Matches bool    `json:"matches"`
	Checks  []Check `json:"checks"`
}

// Err is nil when the installation matches the binding and otherwise the
// refusals of every failed check.
func (i *Installation) Err() error {
	var l blocking.List
	for _, c := range i.Checks {
		if !c.OK {
			l = append(l, blocking.New(c.Code, "%s", c.Detail).At("", c.Name))
		}
	}
	return l.Err()
}

func (i *Installation) add(name string, err *blocking.Error) {
	if err == nil {
		i.Checks = append(i.Checks, Check{Name: name, OK: true})
		return
	}
	i.Checks = append(i.Checks, Check{Name: name, Code: err.Code, Detail: err.Detail})
}

// TurnRecord is one run of the deployment as a transcript shows it: names,
// closed codes and digests only. Its JSON (oa harness transcript --json)
// is camelCase like the rest of oa's --json output; the run record it is
// read from keeps its own snake_case (runDoc).
type TurnRecord struct {
	// Time is when the run was created; UpdatedAt when it last moved.
	Time      time.Time `json:"time"`
	UpdatedAt time.Time `json:"updatedAt"`
	RunID     string    `json:"runId"`
	RequestID string    `json:"requestId"`
	// Workflow is the job run; empty (and WorkflowWithheld) when the
	// caller named no job of the release, since a name the caller made up
	// is the caller's text.
	Workflow         string           `json:"workflow"`
	WorkflowWithheld bool             `json:"workflowWithheld,omitempty"`
	Attempt          int              `json:"attempt"`
	Outcome          contract.Outcome `json:"outcome"`
	Reason           string           `json:"reason"`
	ReceiptDigest    string           `json:"receiptDigest,omitempty"`
}
