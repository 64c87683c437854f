package console

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/internal/escape"
	"github.com/oa-dev/oa/internal/plural"
)

//go:embed templates/*.html static/*
var files embed.FS

// pages are the console's templates, each the layout with its page.
var pages = func() map[string]*template.Template {
	funcs := template.FuncMap{
		"when": func(t time.Time) string {
			if t.IsZero() {
				return ""
			}
			return t.UTC().Format(time.RFC3339)
		},
		"whenp": func(t *time.Time) string {
			if t == nil {
				return ""
			}
			return t.UTC().Format(time.RFC3339)
		},
		"join":  strings.Join,
		"count": plural.Count,
	}
	base := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(files, "templates/layout.html"))
	names, err := fs.Glob(files, "templates/*.html")
	if err != nil {
		panic(err)
	}
	out := map[string]*template.Template{}
	for _, n := range names {
		name := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if name == "layout" {
			continue
		}
		out[name] = template.Must(template.Must(base.Clone()).ParseFS(files, n))
	}
	return out
}()

// view is what the layout shows around a page.
type view struct {
	Title string
	// Nav is the page's entry in the navigation ("" for none).
	Nav  string
	CSRF string
	// Host is the host's name in its policy.
	Host string
	// LoggedIn is false on a refusal before a session.
	LoggedIn bool
	// Fleet says the host keeps a fleet record: only then is the Fleet
	// page linked.
	Fleet bool
	Page  any
}

var titles = map[string]string{"inbox": "Inbox", "sign": "Sign the decision", "question": "Answer the app's question", "answer": "Sign the answer", "history": "History", "chain": "Chain", "connections": "Connections", "fleet": "Fleet", "refused": "Refused"}

// render writes the page name with data, rendered whole before anything
// is sent (a template fault is a 500, never half a page).
func (s *Server) render(w http.ResponseWriter, r *http.Request, sess *session, status int, name string, data any) {
	v := view{Title: titles[name], Nav: name, Host: s.h.Policy.Host, Page: data}
	if sess != nil {
		v.CSRF, v.LoggedIn = sess.csrf, true
		v.Fleet = s.fleetShown(r.Context())
	}
	var b bytes.Buffer
	if err := pages[name].ExecuteTemplate(&b, "layout.html", v); err != nil {
		fmt.Fprintf(s.opts.Operator, "oa console: page %s: %v\n", name, err)
		http.Error(w, "the page cannot be shown: see the console's terminal", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(b.Bytes())
	}
}

// refusedPage is a refusal as shown.
type refusedPage struct {
	Refusals []shownRefusal
}

// shownRefusal is one refusal for people: its code, title, where, detail
// and the catalogue's copy.
type shownRefusal struct {
	Code, Title, Where, Detail, Copy string
}

func shownRefusals(l blocking.List) []shownRefusal {
	if len(l) == 0 {
		return []shownRefusal{{Title: "a fault stopped this request", Copy: "Nothing was changed by this page. The console's terminal says what failed."}}
	}
	out := make([]shownRefusal, len(l))
	for i, e := range l {
		entry := e.Entry()
		where := e.Path
		if e.Pos != "" {
			where = strings.TrimSpace(e.Pos + " " + e.Path)
		}
		out[i] = shownRefusal{Code: string(e.Code), Title: entry.Title, Where: where, Detail: e.Detail, Copy: entry.Copy}
	}
	return out
}

// indentJSON is v indented for a <pre>, control characters escaped, so
// nothing read can hide or reorder text on the page.
func indentJSON(v json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Indent(&b, v, "", "  "); err != nil {
		return escape.Controls(string(v))
	}
	return escape.Controls(b.String())
}
