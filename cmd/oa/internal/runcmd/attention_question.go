package runcmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/cmd/oa/internal/cli"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/coordinator/attention"
	"github.com/oa-dev/oa/host"
)

// newQuestionCmd shows the question an app asks during a change, asked
// of the coordinator waiting for the answer (the text is kept nowhere).
func newQuestionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "question ID",
		Short: "Show the question an app asks during a change (kept in the waiting coordinator only)",
		Args:  cli.WantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return cli.WithHost(cmd, func(h *host.Host) error {
				q, err := coordinator.AttentionRecords(h).ShowQuestion(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				if cli.WantJSON(cmd) {
					return cli.PrintJSON(cmd.OutOrStdout(), q)
				}
				printQuestion(cmd, q)
				return nil
			})
		},
	}
}

func printQuestion(cmd *cobra.Command, q *attention.QuestionShown) {
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "attention %s: the app behind connection %s (capability %s) asks:\n  %s\n", q.AttentionID, q.Connection, q.Capability, q.Message)
	if q.URL != "" {
		fmt.Fprintf(out, "  open: %s\n", q.URL)
	}
	var form struct {
		Properties map[string]struct {
			Type        string `json:"type"`
			Description string `json:"description"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	_ = json.Unmarshal(q.Schema, &form)
	names := make([]string, 0, len(form.Properties))
	for n := range form.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := form.Properties[n]
		fmt.Fprintf(out, "  field %s (%s) %s\n", n, p.Type, p.Description)
	}
	fmt.Fprintf(out, "answer: oa attention answer %s (--person NAME --key FILE | --person NAME --ssh-agent | --as NAME) (--accept [--set FIELD=VALUE]… | --decline | --cancel)\n", q.AttentionID)
}

// newAnswerCmd sends a person's answer to an app's question through the
// coordinator waiting for it; the app gets it unchanged.
func newAnswerCmd() *cobra.Command {
	var f decisionFlags
	var content string
	var accept, decline, cancel bool
	var set []string
	cmd := &cobra.Command{
		Use:   "answer ID (--person NAME (--key FILE | --ssh-agent) | --as NAME) (--accept [--set FIELD=VALUE]… | --content JSON | --decline | --cancel)",
		Short: "Answer the question an app asks during a change: accept with its fields, decline or cancel",
		Long: `Answer sends a person's answer to the question an app asked while making
a change (an attention item of kind downstream_question), through the
coordinator whose call waits for it: accept with the fields the app's form
asks for (--set FIELD=VALUE, typed by the form, or --content with a JSON
object), decline, or cancel. The answer is checked against the form and
reaches the app unchanged; only its action and a digest are recorded. See
the question with oa attention question ID. Both prove to the coordinator,
with the host's coordinator secret, that a person on the host sends them:
run them as the coordinator's user with its OA_HOME.

On a host whose policy names the persons who decide, an answer is signed
like every decision: --person NAME with --key FILE or --ssh-agent, over
the item, the answer's digest and the decision it amounts to (accept is
approve, decline and cancel are reject, held to the person's rights); the
waiting coordinator checks it before the app gets anything. --as NAME
records a free-text name on a host whose policy names no persons.`,
		Args: cli.WantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n := 0
			for _, b := range []bool{accept || content != "" || len(set) > 0, decline, cancel} {
				if b {
					n++
				}
			}
			if n != 1 || (content != "" && len(set) > 0) {
				return fmt.Errorf("give exactly one of --accept (with --set or with --content), --decline or --cancel (see %s --help)", cmd.CommandPath())
			}
			if f.statement != "" || f.signature != "" {
				return cli.Usage(errors.New("an answer is signed with --key FILE or --ssh-agent: its statement names the answer, made here"))
			}
			if err := f.check(); err != nil {
				return err
			}
			return cli.WithHost(cmd, func(h *host.Host) error {
				a := attention.Answer{Action: "accept"}
				switch {
				case decline:
					a.Action = "decline"
				case cancel:
					a.Action = "cancel"
				case content != "":
					if err := json.Unmarshal([]byte(content), &a.Content); err != nil {
						return blocking.New(blocking.QuestionAnswerInvalid, "--content must be one JSON object")
					}
				case len(set) > 0:
					q, err := coordinator.AttentionRecords(h).ShowQuestion(cmd.Context(), args[0])
					if err != nil {
						return err
					}
					if a.Content, err = q.FormContent(set); err != nil {
						return err
					}
				}
				by := f.as
				var signed *host.SignedDecision
				if f.person != "" {
					per := h.Policy.Person(f.person)
					if per == nil {
						return blocking.New(blocking.DecisionPersonUnknown, "the host policy names no such person")
					}
					stmt, err := coordinator.AnswerStatement(cmd.Context(), h, args[0], a, f.person, time.Now())
					if err != nil {
						return err
					}
					if signed, err = f.signStatement(per, stmt); err != nil {
						return err
					}
					by = f.person
				}
				it, err := coordinator.AttentionRecords(h).AnswerQuestionSigned(cmd.Context(), args[0], a, by, signed)
				if err != nil {
					return err
				}
				return printAttention(cmd, it)
			})
		},
	}
	cmd.Flags().StringVar(&f.person, "person", "", "the person answering, as the host policy names them")
	cmd.Flags().StringVar(&f.key, "key", "", "sign with this private key file (SSH, or cosign)")
	cmd.Flags().BoolVar(&f.sshAgent, "ssh-agent", false, "sign with the person's key in the ssh-agent at SSH_AUTH_SOCK")
	cmd.Flags().StringVar(&f.as, "as", "", "a free-text name, only on a host whose policy names no persons (recorded unverified)")
	cmd.Flags().BoolVar(&accept, "accept", false, "accept, with the fields the app asks for")
	cmd.Flags().StringArrayVar(&set, "set", nil, "a field of the app's form, FIELD=VALUE (repeatable; implies --accept)")
	cmd.Flags().StringVar(&content, "content", "", "the accepted fields as one JSON object (implies --accept)")
	cmd.Flags().BoolVar(&decline, "decline", false, "decline the app's question")
	cmd.Flags().BoolVar(&cancel, "cancel", false, "cancel the app's question")
	return cmd
}
