package schemas

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// markdownLink is an inline markdown link's target: [text](target).
var markdownLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocsLinksResolve: every relative link in README.md and the pages
// under docs/ names a file that exists, and a #fragment names a heading
// of that file (or of the page itself), so moving a section to its own
// page cannot leave a link behind.
func TestDocsLinksResolve(t *testing.T) {
	pages := []string{"../README.md"}
	err := filepath.WalkDir("../docs", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			pages = append(pages, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, page := range pages {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, target := range linkTargets(string(text)) {
			if problem := checkLink(page, target); problem != "" {
				t.Errorf("%s: link %s: %s", strings.TrimPrefix(page, "../"), target, problem)
			}
		}
	}
}

// linkTargets are the targets of the inline links of a markdown text
// outside fenced code blocks, where a ](…) is code, not a link.
func linkTargets(text string) []string {
	var targets []string
	fenced := false
	for line := range strings.SplitSeq(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range markdownLink.FindAllStringSubmatch(line, -1) {
			targets = append(targets, m[1])
		}
	}
	return targets
}

// checkLink says what is wrong with target as a link from page, or "" when
// it resolves; links to other sites are not followed.
func checkLink(page, target string) string {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return ""
	}
	path, fragment, _ := strings.Cut(target, "#")
	file := page
	if path != "" {
		file = filepath.Join(filepath.Dir(page), path)
		if _, err := os.Stat(file); err != nil {
			return "no such file"
		}
	}
	if fragment == "" || !strings.HasSuffix(file, ".md") {
		return ""
	}
	text, err := os.ReadFile(file)
	if err != nil {
		return err.Error()
	}
	for _, heading := range headingAnchors(string(text)) {
		if heading == fragment {
			return ""
		}
	}
	return "no heading #" + fragment + " in " + filepath.Base(file)
}

// headingAnchors are the anchors GitHub makes of a markdown text's
// headings: lower case, punctuation dropped, spaces as hyphens.
func headingAnchors(text string) []string {
	var anchors []string
	fenced := false
	for line := range strings.SplitSeq(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		anchors = append(anchors, githubAnchor(title))
	}
	return anchors
}

// githubAnchor is the anchor of one heading's title.
func githubAnchor(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127 && unicode.IsLetter(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
