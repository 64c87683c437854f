package runcmd

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/cmd/oa/internal/cli"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/coordinator/attention"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/signing"
)

// How a person proves who they are when deciding from the CLI: the
// decision is a statement (host.DecisionStatement) signed with the key
// the host policy names for them, made one of three ways:
//
//   - --key FILE: their SSH private key (or cosign key) file; oa signs.
//   - --ssh-agent: the key is in the ssh-agent at SSH_AUTH_SOCK (a
//     hardware key, a key that never leaves the agent); oa asks it to sign.
//   - --statement FILE --signature FILE: they print the statement with
//     oa attention statement, sign it themselves with
//     ssh-keygen -Y sign -n oa-decision (or cosign sign-blob), and give
//     both: the key never meets oa at all.
//
// Each is checked the same way on the host before the decision has any
// effect. --as NAME (free text) remains for hosts whose policy names no
// persons, recorded as unverified.

// decisionFlags are the flags of a decision command.
type decisionFlags struct {
	as, person, key, statement, signature string
	sshAgent                              bool
	text, textFile                        string
}

func newDecisionCmd(decision string) *cobra.Command {
	var f decisionFlags
	use := decision + " ID --person NAME (--key FILE | --ssh-agent | --statement FILE --signature FILE)"
	if decision == contract.DecisionTeach {
		use += " (--text TEXT | --text-file FILE)"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: decisionShort[decision],
		Long: decisionShort[decision] + `.

The decision is signed by the person deciding, with the key the host
policy names for them (persons in policy.cue), over the item, the proposed
call it waits on, the decision and the time; the host checks it before it
has any effect and keeps it. Sign with --key FILE (an SSH private key such
as ~/.ssh/id_ed25519, or a cosign key), --ssh-agent (the ssh-agent at
SSH_AUTH_SOCK), or sign yourself:

  oa attention statement ID --decision ` + decision + ` --person NAME > statement
  ssh-keygen -Y sign -f ~/.ssh/id_ed25519 -n oa-decision statement
  oa attention ` + decision + ` ID --person NAME --statement statement --signature statement.sig

On a host whose policy names no persons, --as NAME records a free-text
name instead, marked unverified.`,
		Args: cli.WantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			txt, err := teachText(cmd, f.text, f.textFile)
			if err != nil {
				return err
			}
			if err := f.check(); err != nil {
				return err
			}
			return cli.WithHost(cmd, func(h *host.Host) error {
				d := attention.Decision{AttentionID: args[0], Decision: decision, By: f.as, Channel: "cli", Text: txt}
				if f.person != "" {
					if d.Signed, err = f.sign(cmd, h, args[0], decision); err != nil {
						return err
					}
				}
				it, err := coordinator.DecideAttention(cmd.Context(), h, d)
				if err != nil {
					return err
				}
				return printAttention(cmd, it)
			})
		},
	}
	cmd.Flags().StringVar(&f.person, "person", "", "the person deciding, as the host policy names them")
	cmd.Flags().StringVar(&f.key, "key", "", "sign with this private key file (SSH, or cosign)")
	cmd.Flags().BoolVar(&f.sshAgent, "ssh-agent", false, "sign with the person's key in the ssh-agent at SSH_AUTH_SOCK")
	cmd.Flags().StringVar(&f.statement, "statement", "", "the statement signed (as oa attention statement printed it)")
	cmd.Flags().StringVar(&f.signature, "signature", "", "the signature of --statement (ssh-keygen -Y sign -n oa-decision, or cosign sign-blob)")
	cmd.Flags().StringVar(&f.as, "as", "", "a free-text name, only on a host whose policy names no persons (recorded unverified)")
	if decision == contract.DecisionTeach {
		cmd.Flags().StringVar(&f.text, "text", "", fmt.Sprintf("how the package should change (at most %d bytes, no customer data)", attention.MaxTeachText))
		cmd.Flags().StringVar(&f.textFile, "text-file", "", "read the text from FILE (- for standard input)")
	}
	return cmd
}

// check refuses flags that do not name one way to decide.
func (f *decisionFlags) check() error {
	ways := 0
	for _, b := range []bool{f.key != "", f.sshAgent, f.signature != "" || f.statement != ""} {
		if b {
			ways++
		}
	}
	switch {
	case f.person == "" && f.as == "":
		return cli.Usage(errors.New("name the person deciding: --person NAME with a way to sign (or, on a host whose policy names no persons, --as NAME)"))
	case f.person != "" && f.as != "":
		return cli.Usage(errors.New("give --person or --as, not both"))
	case f.as != "" && ways > 0:
		return cli.Usage(errors.New("--as is a free-text name: it is never signed; sign with --person NAME"))
	case f.person != "" && ways != 1:
		return cli.Usage(errors.New("give exactly one way to sign: --key FILE, --ssh-agent, or --statement FILE with --signature FILE"))
	case (f.signature == "") != (f.statement == ""):
		return cli.Usage(errors.New("--signature and --statement go together: the signature is of that statement"))
	}
	return nil
}

// sign makes the person's signed decision on item id.
func (f *decisionFlags) sign(cmd *cobra.Command, h *host.Host, id, decision string) (*host.SignedDecision, error) {
	per := h.Policy.Person(f.person)
	if per == nil {
		return nil, blocking.New(blocking.DecisionPersonUnknown, "the host policy names no such person")
	}
	if f.signature != "" {
		return f.signedByHand(per, decision)
	}
	stmt, err := coordinator.StatementFor(cmd.Context(), h, id, decision, f.person, time.Now())
	if err != nil {
		return nil, err
	}
	return f.signStatement(per, stmt)
}

// signStatement signs stmt as the person per, with --key or --ssh-agent.
func (f *decisionFlags) signStatement(per *host.Person, stmt *host.DecisionStatement) (*host.SignedDecision, error) {
	if f.sshAgent {
		signer, err := agentSigner(per)
		if err != nil {
			return nil, err
		}
		return coordinator.SignDecision(*stmt, signer)
	}
	raw, err := readBounded(f.key, 1<<20)
	if err != nil {
		return nil, blocking.New(blocking.KeyInvalid, "the private key file cannot be read")
	}
	if strings.Contains(string(raw), "OPENSSH PRIVATE KEY") || strings.Contains(string(raw), "BEGIN RSA PRIVATE KEY") || strings.Contains(string(raw), "BEGIN EC PRIVATE KEY") {
		signer, err := ssh.ParsePrivateKey(raw)
		var missing *ssh.PassphraseMissingError
		if errors.As(err, &missing) {
			pw, perr := cli.PromptPassword(false)()
			if perr != nil {
				return nil, perr
			}
			signer, err = ssh.ParsePrivateKeyWithPassphrase(raw, pw)
		}
		if err != nil {
			return nil, blocking.New(blocking.KeyInvalid, "the SSH private key cannot be opened")
		}
		return coordinator.SignDecision(*stmt, signer)
	}
	signer, err := cli.LoadSigner(f.key)
	if err != nil {
		return nil, err
	}
	msg, err := stmt.Message()
	if err != nil {
		return nil, err
	}
	sig, err := signer.SignBytes(msg)
	if err != nil {
		return nil, err
	}
	return &host.SignedDecision{Statement: *stmt, Scheme: host.SchemeCosign, Key: signer.KeyID(), Signature: encodeBase64(sig)}, nil
}

// signedByHand is the decision of a statement the person signed
// themselves (--statement, --signature).
func (f *decisionFlags) signedByHand(per *host.Person, decision string) (*host.SignedDecision, error) {
	raw, err := readBounded(f.statement, host.MaxStatementBytes)
	if err != nil {
		return nil, blocking.New(blocking.DecisionStatementMismatch, "the statement file cannot be read")
	}
	stmt, err := host.ParseStatement(raw)
	if err != nil {
		return nil, err
	}
	if stmt.Person != f.person || stmt.Decision != decision {
		return nil, blocking.New(blocking.DecisionStatementMismatch, "the statement is not of this person's %s", decision)
	}
	sig, err := readBounded(f.signature, signing.MaxSSHSignature)
	if err != nil {
		return nil, blocking.New(blocking.DecisionSignatureInvalid, "the signature file cannot be read")
	}
	sd := &host.SignedDecision{Statement: *stmt, Key: per.KeyOf(""), Signature: string(sig), Scheme: host.SchemeSSH}
	if per.SSHPublicKey() == nil {
		sd.Scheme, sd.Signature = host.SchemeCosign, strings.TrimSpace(string(sig))
	}
	return sd, nil
}

// agentSigner is the signer of the person's key in the ssh-agent at
// SSH_AUTH_SOCK.
func agentSigner(per *host.Person) (ssh.Signer, error) {
	sock := os.Getenv("SSH_AUTH_SOCK")
	if sock == "" || per.SSHPublicKey() == nil {
		return nil, blocking.New(blocking.KeyInvalid, "no ssh-agent (SSH_AUTH_SOCK) holding an SSH key of the person")
	}
	conn, err := net.Dial("unix", sock)
	if err != nil {
		return nil, blocking.New(blocking.KeyInvalid, "the ssh-agent at SSH_AUTH_SOCK cannot be reached")
	}
	signers, err := agent.NewClient(conn).Signers()
	if err != nil {
		conn.Close()
		return nil, blocking.New(blocking.KeyInvalid, "the ssh-agent at SSH_AUTH_SOCK lists no keys")
	}
	want := per.SSHPublicKey().Marshal()
	for _, s := range signers {
		if string(s.PublicKey().Marshal()) == string(want) {
			return s, nil
		}
	}
	conn.Close()
	return nil, blocking.New(blocking.KeyInvalid, "the ssh-agent holds no key the host policy names for the person")
}

// readBounded reads at most limit bytes of path, refusing a longer file.
func readBounded(path string, limit int64) ([]byte, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	b, err := io.ReadAll(io.LimitReader(file, limit+1))
	if err == nil && int64(len(b)) > limit {
		err = errors.New("too long")
	}
	return b, err
}

// newStatementCmd prints the statement a person signs to decide.
func newStatementCmd() *cobra.Command {
	var decision, person string
	cmd := &cobra.Command{
		Use:   "statement ID --decision DECISION --person NAME",
		Short: "Print the statement a person signs to decide on an item (ssh-keygen -Y sign -n oa-decision)",
		Long: `Statement prints, exactly as it is signed, the statement of a decision on
an attention item: host, deployment, item, run, the digest of the proposed
call it waits on, the decision, the person and the time now. Save it to a
file, sign it with ssh-keygen -Y sign -f KEY -n oa-decision FILE (or cosign
sign-blob for a cosign key), and decide with --statement FILE --signature
FILE.sig. Decide within a few minutes of its time only if the clocks
agree; the statement holds for this item, decision and person only.`,
		Args: cli.WantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !contains(contract.Decisions, decision) || person == "" {
				return cli.Usage(fmt.Errorf("give --decision (%s) and --person NAME", strings.Join(contract.Decisions, ", ")))
			}
			return cli.WithHost(cmd, func(h *host.Host) error {
				if h.Policy.Person(person) == nil {
					return blocking.New(blocking.DecisionPersonUnknown, "the host policy names no such person")
				}
				s, err := coordinator.StatementFor(cmd.Context(), h, args[0], decision, person, time.Now())
				if err != nil {
					return err
				}
				msg, err := s.Message()
				if err != nil {
					return err
				}
				_, err = cmd.OutOrStdout().Write(msg)
				return err
			})
		},
	}
	cmd.Flags().StringVar(&decision, "decision", "", "the decision: "+strings.Join(contract.Decisions, ", "))
	cmd.Flags().StringVar(&person, "person", "", "the person deciding, as the host policy names them")
	return cmd
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// decidedBy says who decided an item, for people: the person and the key
// that signed, or the free-text name marked unverified.
func decidedBy(it *attention.Item) string {
	if it.DecidedKey != "" {
		return it.DecidedBy + " (key " + it.DecidedKey + ")"
	}
	return it.DecidedBy + " (free text, unverified)"
}

func encodeBase64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
