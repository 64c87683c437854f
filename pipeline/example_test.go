package pipeline_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/sandbox"
	"github.com/oa-dev/oa/examples"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/pipeline"
	"github.com/oa-dev/oa/resolve"
)

// digests matches a digest in a progress line.
var digests = regexp.MustCompile(`sha256:[0-9a-f]{64}`)

// The publisher's half: a bundle folder compiled, pushed into the OCI
// layout under a home folder, signed by the publisher and attested by a
// conformance authority. The release is named by its digest.
func ExamplePublish() {
	ctx := context.Background()
	work, _ := os.MkdirTemp("", "oa-example-")
	defer os.RemoveAll(work)

	bundle := filepath.Join(work, "bundle")
	if err := examples.Write(examples.Default, bundle); err != nil {
		fmt.Println(err)
		return
	}
	publisher, _ := pipeline.NewKeys()
	authority, _ := pipeline.NewKeys()
	rel, err := pipeline.Publish(ctx, filepath.Join(work, "home"), bundle, publisher.Signer, authority.Signer)
	if err != nil {
		fmt.Println(err)
		return
	}
	name, digest, _ := strings.Cut(rel.Ref.String(), "@")
	fmt.Println(name, strings.HasPrefix(digest, "sha256:"), strings.HasPrefix(rel.IR, "sha256:"))
	// Output: clinic-triage true true
}

// The operator's half on a host that trusts the publisher and the
// authority: admit the release, sign the starter capability registry, add
// and verify a connection (here the built-in sandbox), resolve the plan
// and bind it with a person's approval. The binding's plan digest is what
// the coordinator rechecks before every step.
func ExamplePrepareHost() {
	ctx := context.Background()
	home, _ := os.MkdirTemp("", "oa-example-")
	defer os.RemoveAll(home)

	bundle := filepath.Join(home, "bundle")
	if err := examples.Write(examples.Default, bundle); err != nil {
		fmt.Println(err)
		return
	}
	publisher, _ := pipeline.NewKeys()
	authority, _ := pipeline.NewKeys()
	rel, err := pipeline.Publish(ctx, home, bundle, publisher.Signer, authority.Signer)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := host.Init(home, host.InitOptions{
		Host:        "example-host",
		Publishers:  map[string][]byte{"publisher": publisher.Public},
		Authorities: map[string][]byte{"authority": authority.Public},
	}); err != nil {
		fmt.Println(err)
		return
	}
	h, err := host.Open(ctx, home)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()

	b, err := pipeline.PrepareHost(ctx, h, pipeline.HostOptions{
		Release: rel, By: "Operator", Now: time.Now(),
		Connections: []pipeline.Connection{{Name: "sandbox", Connector: resolve.SandboxConnector, Config: connector.Config{Command: connector.SandboxCommand}}},
		Connector:   connector.Options{SandboxDir: sandbox.Dir(home)},
		Deployment:  "clinic", Model: "m",
		// Digests differ with every key pair: the example prints them elided.
		Progress: func(line string) { fmt.Println(digests.ReplaceAllString(line, "sha256:…")) },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(strings.HasPrefix(b.PlanDigest, "sha256:"))
	// Output:
	// admitted on host example-host by Operator
	// capability registry signed (sha256:…)
	// sandbox connection verified
	// plan sha256:… resolved and bound to deployment clinic
	// true
}
