package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// TestCompletionKnowsThePersons: --person completes the persons the host
// policy names (oa harness install, oa attention answer), and nothing on
// a host whose policy names no one.
func TestCompletionKnowsThePersons(t *testing.T) {
	h := hosttest.New(t, nil)
	t.Setenv("OA_HOME", h.Home)
	var withPerson [][]string
	root := newRoot(nil, nil)
	for _, path := range commandPaths(root) {
		c, _, _ := root.Find(path)
		if c.Flags().Lookup("person") != nil {
			withPerson = append(withPerson, path)
		}
	}
	if len(withPerson) == 0 {
		t.Fatal("no command takes --person")
	}
	complete := func(path []string) []string {
		t.Helper()
		names, directive := completions(t, append(slices.Clone(path), "--person", "")...)
		if directive != ":4" {
			t.Errorf("oa %v --person offers files (%s)", path, directive)
		}
		return names
	}
	for _, path := range withPerson {
		if names := complete(path); len(names) != 0 {
			t.Errorf("oa %v --person with no persons named: %v", path, names)
		}
	}

	key := func() string {
		pub, _, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		k, err := ssh.NewPublicKey(pub)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k)))
	}
	pf, err := os.OpenFile(filepath.Join(h.Home, host.PolicyFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(pf, "\npersons: {\nbob: {ssh_key: %q, may: [{decide: [\"escalate\"]}]}\nada: {name: \"Dr Ada\", ssh_key: %q, may: [{decide: [\"approve\"]}]}\n}\n", key(), key())
	pf.Close()
	for _, path := range withPerson {
		if names := complete(path); !slices.Equal(names, []string{"ada", "bob"}) {
			t.Errorf("oa %v --person: %v, want ada and bob", path, names)
		}
	}
}
