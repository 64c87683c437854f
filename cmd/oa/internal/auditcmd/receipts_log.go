package auditcmd

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/cmd/oa/internal/cli"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/atomicfile"
	"github.com/oa-dev/oa/internal/boundedfile"
	"github.com/oa-dev/oa/ledger"
	"github.com/oa-dev/oa/ledger/translog"
)

// newLogCmds are the receipts commands of the host's transparency log:
// prove, verify-proof and log-key (issue 41).
func newLogCmds() []*cobra.Command {
	var out string
	prove := &cobra.Command{
		Use:   "prove RECEIPT_DIGEST",
		Short: "Write the c2sp.org/tlog-proof that a receipt is in this host's log",
		Long: `Prove writes a c2sp.org/tlog-proof that the receipt whose digest is
RECEIPT_DIGEST (sha256:HEX, as receipts list prints it) is a leaf of this
host's transparency log: its index, the inclusion hashes and the log's
newest checkpoint signed by the host's log key, the digest in the extra
line. Anyone holding the log's public key (receipts log-key) checks it
offline with receipts verify-proof or any C2SP verifier. To stdout, or
to -o FILE.`,
		Args: cli.WantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return cli.WithHost(cmd, func(h *host.Host) error {
				p, err := ledger.Open(h).ProveReceipt(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				if out == "" {
					_, err := cmd.OutOrStdout().Write(p.Marshal())
					return err
				}
				return atomicfile.Write(out, p.Marshal(), 0o644)
			})
		},
	}
	prove.Flags().StringVarP(&out, "output", "o", "", "write the proof to this file instead of stdout")

	var logKey, seen, receipt string
	var witnessKeys []string
	var quorum int
	verify := &cobra.Command{
		Use:   "verify-proof FILE",
		Short: "Check a c2sp.org/tlog-proof offline, with the log's public key alone",
		Long: `Verify-proof checks a c2sp.org/tlog-proof offline, with nothing but
the log's public key: the checkpoint is a signed note of that key whose
origin is the key's name, and the inclusion hashes lead from the entry
(the receipt digest in the proof's extra line, or --receipt) at its index
to the checkpoint's root. --log-key is the key's text or a file holding
it; on a host it defaults to the host's own ($OA_HOME/keys/log.pub).
--witness-key (repeated) and --quorum ask that many witnesses' cosignatures;
on a host, without --log-key, --witness-key or --quorum, they default to
the witnesses and quorum of the host policy's witnessing section (a
c2sp.org/tlog-policy text's groups and all);
--checkpoint is a checkpoint of the log seen before: one of the same size
with another root is a fork (log_forked). Exit status 2 names the refusal
(log_proof_invalid, log_checkpoint_unverified, log_witness_quorum,
log_forked, log_key_invalid).`,
		Args: cli.WantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := readBounded(args[0], translog.MaxProofBytes)
			if err != nil {
				return err
			}
			policy, err := proofPolicy(logKey, witnessKeys, quorum, cmd.Flags().Changed("quorum"), seen)
			if err != nil {
				return err
			}
			var entry []byte
			if receipt != "" {
				entry = []byte(receipt)
			}
			v, err := translog.VerifyProof(b, policy, entry)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if cli.WantJSON(cmd) {
				return cli.PrintJSON(w, v)
			}
			printProof(w, v)
			return nil
		},
	}
	verify.Flags().StringVar(&logKey, "log-key", "", "the log's public key (NAME+HASH+BASE64) or a file holding it (default: this host's keys/log.pub)")
	verify.Flags().StringArrayVar(&witnessKeys, "witness-key", nil, "a witness's public key or a file holding it (repeat for each)")
	verify.Flags().IntVar(&quorum, "quorum", 0, "how many of the witnesses must have cosigned the checkpoint")
	verify.Flags().StringVar(&seen, "checkpoint", "", "a signed checkpoint of this log seen before (a file): one of the same size with another root is a fork")
	verify.Flags().StringVar(&receipt, "receipt", "", "the receipt digest the proof must prove (default: the one in the proof)")

	key := &cobra.Command{
		Use:   "log-key",
		Short: "Print this host's log public key, the one auditors verify proofs with",
		Args:  cli.WantArgs(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cli.WithHost(cmd, func(h *host.Host) error {
				k, err := ledger.Open(h).LogKey()
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(cmd.OutOrStdout(), k.VerifierKey())
				return err
			})
		},
	}
	return []*cobra.Command{prove, verify, key}
}

// proofPolicy builds what verify-proof trusts from its flags: on a
// host, its own log key, and, when no witness key or quorum is given,
// the witnesses and quorum of its policy.
func proofPolicy(logKey string, witnessKeys []string, quorum int, quorumGiven bool, seen string) (translog.Policy, error) {
	var p translog.Policy
	ownLog := logKey == ""
	if ownLog {
		logKey = filepath.Join(cli.Home(), translog.PublicKeyFile)
		if _, err := os.Stat(logKey); errors.Is(err, fs.ErrNotExist) {
			return p, blocking.New(blocking.LogKeyInvalid, "no --log-key given and this host has no log key (%s)", translog.PublicKeyFile)
		}
	}
	v, err := translog.ReadVerifierKey(logKey)
	if err != nil {
		return p, err
	}
	p.Log = v
	if ownLog && len(witnessKeys) == 0 && !quorumGiven {
		wit, err := policyWitnessing()
		if err != nil {
			return p, err
		}
		if wit != nil {
			p = wit.TranslogPolicy(v)
			return p, withSeen(&p, seen)
		}
	}
	for _, w := range witnessKeys {
		wv, err := translog.ReadVerifierKey(w)
		if err != nil {
			return p, err
		}
		p.Witnesses = append(p.Witnesses, wv)
	}
	if quorum < 0 || quorum > len(p.Witnesses) {
		return p, cli.Usage(fmt.Errorf("--quorum %d: give between 0 and the %d witness keys given", quorum, len(p.Witnesses)))
	}
	p.Quorum = quorum
	return p, withSeen(&p, seen)
}

// withSeen sets p.Seen from the --checkpoint file, when given.
func withSeen(p *translog.Policy, seen string) error {
	if seen == "" {
		return nil
	}
	b, err := readBounded(seen, translog.MaxCheckpointBytes)
	if err != nil {
		return err
	}
	c, _, err := translog.OpenCheckpoint(b, translog.Policy{Log: p.Log})
	if err != nil {
		return err
	}
	p.Seen = &c.Tree
	return nil
}

// policyWitnessing is the witnessing section of this host's policy, nil
// when the host has no policy or the policy names no witnesses.
func policyWitnessing() (*host.Witnessing, error) {
	path := filepath.Join(cli.Home(), host.PolicyFile)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	pol, err := host.LoadPolicy(path)
	if err != nil {
		return nil, err
	}
	return pol.Witnessing, nil
}

// readBounded reads a file the command was given, refusing one larger
// than max.
func readBounded(path string, max int64) ([]byte, error) {
	b, err := boundedfile.Read(path, max)
	if errors.Is(err, boundedfile.ErrTooLarge) {
		return nil, blocking.New(blocking.LogProofInvalid, "%s is larger than %d bytes", filepath.Base(path), max)
	}
	return b, err
}

// printProof shows a verified proof in one line.
func printProof(w io.Writer, v *translog.Verified) {
	fmt.Fprintf(w, "proof ok: %s is entry %d of log %s (size %d, root %s)", v.Entry, v.Index, v.Origin, v.Size, v.Root)
	if len(v.Cosigners) > 0 {
		fmt.Fprintf(w, ", cosigned by %d witnesses", len(v.Cosigners))
	}
	fmt.Fprintln(w)
}
