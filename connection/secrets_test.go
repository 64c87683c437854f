package connection

import (
	"reflect"
	"testing"
)

func TestWordParts(t *testing.T) {
	for name, want := range map[string][]string{
		"SECRET_TOKEN":  {"secret", "token"},
		"--api-key":     {"api", "key"},
		"apiKey":        {"api", "key"},
		"APIKey":        {"api", "key"},
		"X-Auth-Token":  {"x", "auth", "token"},
		"db.password":   {"db", "password"},
		"OAuth2Token":   {"o", "auth2", "token"},
		"clientSecret1": {"client", "secret1"},
	} {
		if got := wordParts(name); !reflect.DeepEqual(got, want) {
			t.Errorf("wordParts(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestSecretName(t *testing.T) {
	for _, name := range []string{"SECRET_TOKEN", "token", "Password", "PGPASSWORD", "DB_PASSWD", "api_key", "apiKey", "API-KEY", "X-Api-Key",
		"ACCESS_TOKEN", "accesstoken", "clientsecret", "AWS_SECRET_ACCESS_KEY", "credentials", "auth", "Authorization", "session", "cookie", "pass"} {
		if !secretName(name) {
			t.Errorf("secretName(%q) = false, want true", name)
		}
	}
	for _, name := range []string{"PORT", "verbose", "author", "monkey", "keyboard", "token-file", "TOKEN_FILE", "password-env", "api_key_path", "key-id",
		"auth-type", "no-auth", "passthrough", "LOG_LEVEL", "tokenizer", "config", "secretary"} {
		if secretName(name) {
			t.Errorf("secretName(%q) = true, want false", name)
		}
	}
}

func TestScanCommandLine(t *testing.T) {
	paths := map[string]bool{"/run/secrets/token": true}
	isPath := func(s string) bool { return paths[s] }
	for _, tc := range []struct {
		words []string
		want  []int
	}{
		{[]string{"env", "SECRET_TOKEN=hunter2", "server"}, []int{1}},
		{[]string{"env", "secret_token=x", "DB_PASSWORD='pw'", "server"}, []int{1, 2}},
		{[]string{"server", "--token=hunter2"}, []int{1}},
		{[]string{"server", "-password=hunter2"}, []int{1}},
		{[]string{"server", "--password", "hunter2", "--port", "80"}, []int{2}},
		{[]string{"server", "--apiKey", "abc"}, []int{2}},
		{[]string{"curl", "-H", "Authorization: Bearer abc"}, []int{2}},
		{[]string{"server", "X-Api-Key: abc"}, []int{1}},
		{[]string{"API_KEY=abc", "server"}, []int{0}},
		// References to a secret, and what is not one.
		{[]string{"server", "--token", "/run/secrets/token"}, nil},
		{[]string{"server", "--token=/run/secrets/token"}, nil},
		{[]string{"server", "--token-file", "tok.txt", "--password-env", "PW"}, nil},
		{[]string{"env", "TOKEN=$TOKEN", "PASSWORD=${PW}", "server"}, nil},
		{[]string{"server", "--token=", "--auth", "--verbose"}, nil},
		{[]string{"server", "--no-auth", "serve"}, nil},
		{[]string{"server", "--port", "8080", "LOG_LEVEL=debug", "https://example.org/x"}, nil},
	} {
		var got []int
		for _, f := range scanCommandLine(tc.words, isPath) {
			got = append(got, f.index)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("scanCommandLine(%q) found words %v, want %v", tc.words, got, tc.want)
		}
	}
}
