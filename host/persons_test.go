package host_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/signing"
)

func sshKey(t *testing.T) (ssh.Signer, string) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(s.PublicKey())))
}

// personsPolicy is a starter policy with persons appended.
func personsPolicy(t *testing.T, persons string) string {
	t.Helper()
	return host.StarterPolicy(host.InitOptions{Host: "h", Publishers: map[string][]byte{"acme": newPub(t)}, Authorities: map[string][]byte{"lab": newPub(t)}}) + "\npersons: {\n" + persons + "\n}\n"
}

func loadText(t *testing.T, text string) (*host.Policy, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "policy.cue")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return host.LoadPolicy(p)
}

// TestDecisionsAreContracts: the decisions a policy may give are the
// contract's.
func TestDecisionsAreContracts(t *testing.T) {
	if strings.Join(host.Decisions, ",") != strings.Join(contract.Decisions, ",") {
		t.Fatalf("host.Decisions %v, contract.Decisions %v", host.Decisions, contract.Decisions)
	}
}

// TestPolicyPersonsRefusals: each person has exactly one usable key and
// rights that name decisions; every refusal is located at its field.
func TestPolicyPersonsRefusals(t *testing.T) {
	_, ada := sshKey(t)
	_, bob := sshKey(t)
	pem := strconv.Quote(string(newPub(t)))
	cases := map[string]struct {
		persons string
		want    blocking.Code
		field   string
	}{
		"ssh ok":          {`ada: {ssh_key: "` + ada + `", may: [{decide: ["approve"]}]}`, "", ""},
		"cosign ok":       {`ada: {key: ` + pem + `, may: [{decide: ["reject"], capabilities: ["records.*"], packages: ["clinic-triage"]}]}`, "", ""},
		"no key":          {`ada: {may: [{decide: ["approve"]}]}`, blocking.PolicyPersonInvalid, "persons.ada"},
		"both keys":       {`ada: {ssh_key: "` + ada + `", key: ` + pem + `, may: [{decide: ["approve"]}]}`, blocking.PolicyPersonInvalid, "persons.ada"},
		"bad ssh key":     {`ada: {ssh_key: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBAD", may: [{decide: ["approve"]}]}`, blocking.PolicyPersonInvalid, "persons.ada.ssh_key"},
		"bad pem":         {`ada: {key: "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n", may: [{decide: ["approve"]}]}`, blocking.PolicyPersonInvalid, "persons.ada.key"},
		"shared key":      {`ada: {ssh_key: "` + ada + `", may: [{decide: ["approve"]}]}, bob: {ssh_key: "` + ada + `", may: [{decide: ["reject"]}]}`, blocking.PolicyPersonInvalid, "persons.bob"},
		"unknown right":   {`ada: {ssh_key: "` + ada + `", may: [{decide: ["delete"]}]}`, blocking.PolicyInvalid, ""},
		"no rights":       {`ada: {ssh_key: "` + ada + `", may: []}`, blocking.PolicyInvalid, ""},
		"bad client key":  {`ada: {ssh_key: "` + ada + `", may: [{decide: ["approve"]}], clients: {"claude-code": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBAD"}}`, blocking.PolicyPersonInvalid, "persons.ada.clients.claude-code"},
		"two people ok":   {`ada: {ssh_key: "` + ada + `", may: [{decide: ["approve"]}]}, bob: {ssh_key: "` + bob + `", may: [{decide: ["reject"]}]}`, "", ""},
		"bad name syntax": {`Ada: {ssh_key: "` + ada + `", may: [{decide: ["approve"]}]}`, blocking.PolicyInvalid, ""},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := loadText(t, personsPolicy(t, c.persons))
			if c.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if len(p.Persons) == 0 {
					t.Fatal("no persons loaded")
				}
				return
			}
			located := false
			for _, e := range blocking.Refusals(err) {
				located = located || (e.Code == c.want && strings.Contains(e.Path, c.field) && strings.Contains(e.Pos, "policy.cue:"))
			}
			if !located {
				t.Fatalf("LoadPolicy = %v, want %s located at %s", err, c.want, c.field)
			}
		})
	}
}

// TestPolicyWithoutPersonsKeepsItsDigest: a policy naming no persons
// keeps the digest it had, and names no deciders.
func TestPolicyWithoutPersonsKeepsItsDigest(t *testing.T) {
	text := host.StarterPolicy(host.InitOptions{Host: "h", Publishers: map[string][]byte{"acme": newPub(t)}, Authorities: map[string][]byte{"lab": newPub(t)}})
	a, err := loadText(t, text)
	if err != nil {
		t.Fatal(err)
	}
	_, ada := sshKey(t)
	b, err := loadText(t, text+"\npersons: ada: {ssh_key: \""+ada+"\", may: [{decide: [\"approve\"]}]}\n")
	if err != nil {
		t.Fatal(err)
	}
	if a.DecidersNamed() || !b.DecidersNamed() || a.Digest() == b.Digest() {
		t.Fatalf("deciders %v %v, digests %s %s", a.DecidersNamed(), b.DecidersNamed(), a.Digest(), b.Digest())
	}
}

// TestCheckDecision: a decision counts only when its person is named,
// its signature is that person's key's, the person has the right, and
// its statement says exactly what the host knows of the item.
func TestCheckDecision(t *testing.T) {
	adaKey, ada := sshKey(t)
	malloryKey, _ := sshKey(t)
	clientKey, client := sshKey(t)
	cosignSigner, cosignPub, err := signing.GenerateKeys(nil)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := signing.LoadSigner(cosignSigner, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := loadText(t, personsPolicy(t, `ada: {name: "Dr Ada", ssh_key: "`+ada+`", may: [{decide: ["approve", "reject"], capabilities: ["records.*"]}, {decide: ["escalate"]}], clients: {"claude-code": "`+client+`"}}
carl: {key: `+strconv.Quote(string(cosignPub))+`, may: [{decide: ["reject"], packages: ["clinic-triage"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	claim := host.DecisionClaim{Host: "h", Deployment: "d", AttentionID: "att_1", RunID: "run_1", CallDigest: "sha256:call", Decision: "approve",
		Facts: host.DecisionFacts{Package: "clinic-triage", Capability: "records.update"}, Raised: now.Add(-time.Minute), Now: now}
	stmt := func(c host.DecisionClaim, person string) host.DecisionStatement {
		return host.DecisionStatement{Type: host.DecisionType, Host: c.Host, Deployment: c.Deployment, AttentionID: c.AttentionID, RunID: c.RunID,
			CallDigest: c.CallDigest, Capability: c.Facts.Capability, Decision: c.Decision, Person: person, At: now}
	}
	sshSigned := func(s host.DecisionStatement, key ssh.Signer) *host.SignedDecision {
		msg, err := s.Message()
		if err != nil {
			t.Fatal(err)
		}
		sig, err := signing.SignSSH(key, host.DecisionNamespace, msg)
		if err != nil {
			t.Fatal(err)
		}
		return &host.SignedDecision{Statement: s, Scheme: host.SchemeSSH, Key: signing.SSHFingerprint(key.PublicKey()), Signature: string(sig)}
	}
	good := sshSigned(stmt(claim, "ada"), adaKey)
	if per, err := p.CheckDecision(good, claim); err != nil || per.Name != "Dr Ada" {
		t.Fatalf("ada's approval: %v", err)
	}
	if got := good.Describe(p); !strings.Contains(got, "ada (Dr Ada) by key SHA256:") {
		t.Fatalf("Describe = %q", got)
	}
	viaStmt := stmt(claim, "ada")
	viaStmt.Via = "claude-code"
	if _, err := p.CheckDecision(sshSigned(viaStmt, clientKey), claim); err != nil {
		t.Fatalf("ada's approval via her client installation: %v", err)
	}
	reject := claim
	reject.Decision = "reject"
	cs := stmt(reject, "carl")
	msg, _ := cs.Message()
	raw, err := signer.SignBytes(msg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.CheckDecision(&host.SignedDecision{Statement: cs, Scheme: host.SchemeCosign, Key: signer.KeyID(), Signature: base64.StdEncoding.EncodeToString(raw)}, reject); err != nil {
		t.Fatalf("carl's cosign-signed rejection: %v", err)
	}

	forged := sshSigned(stmt(claim, "ada"), malloryKey)
	forged.Key = good.Key
	otherPkg := claim
	otherPkg.Facts.Capability = "billing.charge"
	otherCap := stmt(claim, "ada")
	otherCap.Capability = "billing.charge"
	early := stmt(claim, "ada")
	early.At = claim.Raised.Add(-time.Hour)
	ahead := stmt(claim, "ada")
	ahead.At = now.Add(time.Hour)
	otherCall := stmt(claim, "ada")
	otherCall.CallDigest = "sha256:other"
	viaUnknown := stmt(claim, "ada")
	viaUnknown.Via = "cursor"
	skip := claim
	skip.Decision = "skip"
	for name, c := range map[string]struct {
		sd    *host.SignedDecision
		claim host.DecisionClaim
		want  blocking.Code
	}{
		"unsigned":           {nil, claim, blocking.DecisionUnsigned},
		"unknown person":     {sshSigned(stmt(claim, "mallory"), malloryKey), claim, blocking.DecisionPersonUnknown},
		"key not in policy":  {forged, claim, blocking.DecisionSignatureInvalid},
		"no such right":      {sshSigned(stmt(skip, "ada"), adaKey), skip, blocking.DecisionNotPermitted},
		"outside capability": {sshSigned(stmt(otherPkg, "ada"), adaKey), otherPkg, blocking.DecisionNotPermitted},
		"other decision":     {good, reject, blocking.DecisionStatementMismatch},
		"other call":         {sshSigned(otherCall, adaKey), claim, blocking.DecisionStatementMismatch},
		"other capability":   {sshSigned(otherCap, adaKey), claim, blocking.DecisionStatementMismatch},
		"before the item":    {sshSigned(early, adaKey), claim, blocking.DecisionStatementMismatch},
		"ahead of the clock": {sshSigned(ahead, adaKey), claim, blocking.DecisionStatementMismatch},
		"unknown client":     {sshSigned(viaUnknown, clientKey), claim, blocking.DecisionSignatureInvalid},
		"client key as own":  {sshSigned(stmt(claim, "ada"), clientKey), claim, blocking.DecisionSignatureInvalid},
	} {
		if _, err := p.CheckDecision(c.sd, c.claim); code(err) != c.want {
			t.Errorf("%s: %v, want %s", name, err, c.want)
		}
	}
}

// TestParseStatement: a statement is read back exactly as printed, and
// nothing else is taken for one.
func TestParseStatement(t *testing.T) {
	s := host.DecisionStatement{Type: host.DecisionType, Host: "h", Deployment: "d", AttentionID: "att_1", RunID: "run_1", CallDigest: "sha256:x", Decision: "approve", Person: "ada", At: time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)}
	msg, err := s.Message()
	if err != nil {
		t.Fatal(err)
	}
	got, err := host.ParseStatement(msg)
	if err != nil || *got != s {
		t.Fatalf("ParseStatement = %+v, %v", got, err)
	}
	for _, bad := range []string{"", "{}", `{"type":"oa.decision/v1","extra":1}`, string(msg) + string(msg)} {
		if _, err := host.ParseStatement([]byte(bad)); code(err) != blocking.DecisionStatementMismatch {
			t.Errorf("ParseStatement(%q) = %v", bad, err)
		}
	}
}
