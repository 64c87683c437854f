package remote_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector/remote"
)

// codes lists the codes of the refusals in err.
func codes(err error) []blocking.Code {
	var out []blocking.Code
	for _, r := range blocking.Refusals(err) {
		out = append(out, r.Code)
	}
	return out
}

// TestNormalize: the URL is normalized, http:// is allowed only to
// loopback or with PlainHTTP, and credentials never ride in the URL or a
// reserved header.
func TestNormalize(t *testing.T) {
	ok := map[string]remote.Config{
		"https://mcp.example.com/mcp":  {URL: "HTTPS://MCP.Example.com:443/mcp"},
		"https://mcp.example.com/":     {URL: "https://mcp.example.com"},
		"http://127.0.0.1:3001/mcp":    {URL: "http://127.0.0.1:3001/mcp"},
		"http://[::1]:3001/mcp":        {URL: "http://[::1]:3001/mcp"},
		"http://localhost/mcp":         {URL: "http://localhost:80/mcp"},
		"http://mcp.internal:8080/mcp": {URL: "http://mcp.internal:8080/mcp", PlainHTTP: true},
	}
	for want, in := range ok {
		got, err := remote.Normalize(in)
		if err != nil || got.URL != want || got.Auth != remote.AuthNone {
			t.Errorf("%s: %v %q", in.URL, err, got.URL)
		}
	}
	bad := []remote.Config{
		{URL: ""}, {URL: "mcp.example.com/mcp"}, {URL: "ftp://mcp.example.com/"}, {URL: "http://mcp.example.com/mcp"},
		{URL: "https://user:pw@mcp.example.com/"}, {URL: "https://mcp.example.com/#x"}, {URL: "https://mcp.example.com/", PlainHTTP: true},
		{URL: "http://127.0.0.1/", CAFile: "/ca.pem"},
		{URL: "https://mcp.example.com/", Headers: []remote.Header{{Name: "Authorization", SecretFile: "/f"}}},
		{URL: "https://mcp.example.com/", Headers: []remote.Header{{Name: "bad header", SecretFile: "/f"}}},
		{URL: "https://mcp.example.com/", Headers: []remote.Header{{Name: "X-Key"}}},
		{URL: "https://mcp.example.com/", Headers: []remote.Header{{Name: "X-Key", SecretFile: "/f"}, {Name: "x-key", SecretFile: "/g"}}},
	}
	for _, in := range bad {
		_, err := remote.Normalize(in)
		if !slices.Contains(codes(err), blocking.ConnectorConfigInvalid) {
			t.Fatalf("%s: want %s, got %v", in.URL, blocking.ConnectorConfigInvalid, err)
		}
		if in.URL != "" && strings.Contains(err.Error(), "pw@") {
			t.Errorf("%s: the refusal quotes the URL", in.URL)
		}
	}
	got, _ := remote.Normalize(remote.Config{URL: "https://a.example/", Headers: []remote.Header{{Name: "x-api-key", SecretFile: "/f"}}})
	if got.Auth != remote.AuthHeaders || got.Headers[0].Name != "X-Api-Key" {
		t.Errorf("headers: %+v", got)
	}
}

// ExampleNormalize: a connection's URL is recorded normalized, and its
// authentication method is derived from the credentials it names.
func ExampleNormalize() {
	r, err := remote.Normalize(remote.Config{
		URL:              "HTTPS://MCP.Example.com:443/mcp",
		BearerSecretFile: "/etc/oa/crm.token",
	})
	fmt.Println(r.URL, r.Auth, err)
	_, err = remote.Normalize(remote.Config{URL: "http://mcp.example.com/mcp"})
	fmt.Println(codes(err))
	// Output:
	// https://mcp.example.com/mcp bearer <nil>
	// [connector_config_invalid]
}
