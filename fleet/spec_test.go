package fleet_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/fleet"
	"github.com/oa-dev/oa/testkit/hosttest"
)

const zero = "sha256:0000000000000000000000000000000000000000000000000000000000000000"

func specSource(extra string) string {
	return `package fleet

name: "clinics"
registry: "127.0.0.1:5000/fleet/clinics"
hosts: {
	h01: labels: {site: "north"}
	h02: labels: {site: "south"}
	h03: labels: {}
}
deployments: clinic: {
	release: "127.0.0.1:5000/oa/clinic-triage@` + zero + `"
	selector: {site: "north"}
	model: "demo-model"
	ceiling: {capabilities: ["*"], max_risk: "consequential"}
}
` + extra
}

func writeSpec(t *testing.T, src string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fleet.cue")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadSpec(t *testing.T) {
	s, err := fleet.LoadSpec(writeSpec(t, specSource("")))
	if err != nil {
		t.Fatal(err)
	}
	a := s.Assignments()
	if a["h01"] != "clinic" || a["h02"] != "" || a["h03"] != "" || len(a) != 1 {
		t.Fatalf("assignments %v", a)
	}
	if s.Repository().Registry != "127.0.0.1:5000" || s.Repository().Repository != "fleet/clinics" {
		t.Fatalf("repository %+v", s.Repository())
	}
	if s.ReleaseRef("clinic").Digest.String() != zero {
		t.Fatal("release digest not parsed")
	}
}

func TestLoadSpecRefusals(t *testing.T) {
	for name, c := range map[string]struct {
		src  string
		code blocking.Code
		pos  string
	}{
		"missing":   {"", blocking.FleetUnreadable, ""},
		"package":   {strings.Replace(specSource(""), "package fleet", "package host", 1), blocking.FleetInvalid, ":1:1"},
		"schema":    {strings.Replace(specSource(""), `max_risk: "consequential"`, `max_risk: "anything"`, 1), blocking.FleetInvalid, ""},
		"tag":       {strings.Replace(specSource(""), `"127.0.0.1:5000/oa/clinic-triage@`, `"127.0.0.1:5000/oa/clinic-triage:1@`, 1), "", ""},
		"unpinned":  {strings.Replace(specSource(""), "@"+zero, "", 1), blocking.FleetInvalid, ":11:"},
		"registry":  {strings.Replace(specSource(""), `registry: "127.0.0.1:5000/fleet/clinics"`, `registry: "fleet/clinics"`, 1), blocking.FleetInvalid, ":4:"},
		"hostkey":   {strings.Replace(specSource(""), `h03: labels: {}`, "h03: {labels: {}, key: \"-----BEGIN PUBLIC KEY-----\\nnope\\n-----END PUBLIC KEY-----\\n\"}", 1), blocking.FleetInvalid, ":8:"},
		"ambiguous": {specSource(`deployments: all: {release: "127.0.0.1:5000/oa/x@` + zero + `", selector: {}, model: "m", ceiling: {capabilities: [], max_risk: "read_only"}}`), blocking.FleetHostAmbiguous, ":6:"},
		"model":     {strings.Replace(specSource(""), `model: "demo-model"`, `model: "ops@example.com"`, 1), blocking.FleetInvalid, ""},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "none.cue")
			if c.src != "" {
				path = writeSpec(t, c.src)
			}
			_, err := fleet.LoadSpec(path)
			if c.code == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !hosttest.HasCode(t, err, c.code) {
				t.Fatalf("got %v, want %s", err, c.code)
			}
			if c.pos != "" && !strings.Contains(blocking.Refusals(err)[0].Pos, c.pos) {
				t.Fatalf("not located at %s: %v", c.pos, err)
			}
		})
	}
}

// TestSpecCeilingPublishers: a ceiling's publishers are each a PEM key or
// a complete identity (with an optional trusted root digest); anything
// else is refused fleet_invalid at the field.
func TestSpecCeilingPublishers(t *testing.T) {
	const iss = `issuer: "https://token.actions.githubusercontent.com"`
	for name, c := range map[string]struct {
		publishers string
		ok         bool
		at         string
	}{
		"identity":                 {`ci: identity: {` + iss + `, subject_regexp: "^https://github\\.com/acme/"}`, true, ""},
		"identity and root":        {`ci: {identity: {` + iss + `, subject: "x"}, trusted_root_digest: "` + zero + `"}`, true, ""},
		"subject twice":            {`ci: identity: {` + iss + `, subject: "x", subject_regexp: "x"}`, false, "deployments.clinic.ceiling.publishers.ci.identity"},
		"no issuer":                {`ci: identity: {subject: "x"}`, false, "deployments.clinic.ceiling.publishers.ci.identity"},
		"bad regexp":               {`ci: identity: {` + iss + `, subject_regexp: "("}`, false, "deployments.clinic.ceiling.publishers.ci.identity"},
		"not a key":                {`ci: key: "-----BEGIN PUBLIC KEY-----\nnope\n-----END PUBLIC KEY-----\n"`, false, "deployments.clinic.ceiling.publishers.ci.key"},
		"root digest not sha256":   {`ci: {identity: {` + iss + `, subject: "x"}, trusted_root_digest: "md5:00"}`, false, ""},
		"neither key nor identity": {`ci: {}`, false, ""},
	} {
		t.Run(name, func(t *testing.T) {
			src := strings.Replace(specSource(""), `ceiling: {capabilities: ["*"], max_risk: "consequential"}`, `ceiling: {capabilities: ["*"], max_risk: "consequential", publishers: {`+c.publishers+`}}`, 1)
			spec, err := fleet.LoadSpec(writeSpec(t, src))
			if c.ok {
				if err != nil || len(spec.Deployments["clinic"].Ceiling.Publishers) != 1 {
					t.Fatalf("%v", err)
				}
				return
			}
			if !hosttest.HasCode(t, err, blocking.FleetInvalid) || (c.at != "" && !strings.Contains(err.Error(), c.at)) {
				t.Fatalf("want fleet_invalid at %q: %v", c.at, err)
			}
		})
	}
}
