package ir

import (
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/oa-dev/oa/blocking"
)

// Finding is one piece of customer state found in a text. It says where
// (a byte offset into the text) and which rule matched, never what matched.
type Finding struct {
	Code blocking.Code
	// Offset is the byte offset of the match in the scanned text.
	Offset int
	// Rule names the rule that matched, such as "github token".
	Rule string
}

type shapeRule struct {
	code blocking.Code
	rule string
	re   *regexp.Regexp
	// needles are lower-case strings of which every match contains one
	// (in the lower-cased text); a text with none of them cannot match,
	// which saves running the expression.
	needles []string
}

// digits are the needles of the rules that need a digit.
var digits = []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}

// mayMatch reports whether lower (a lower-cased text) holds a needle.
func (r shapeRule) mayMatch(lower string) bool {
	for _, n := range r.needles {
		if strings.Contains(lower, n) {
			return true
		}
	}
	return false
}

// textRules are the shapes of customer state refused in any text a package
// carries. They are checked in order; an earlier rule wins where matches
// overlap, so specific shapes come before the generic entropy rule. They
// are compiled on first use: only the processes that scan text (compile,
// push, inspect, connection changes) pay for them, not every oa start.
var textRules = sync.OnceValue(func() []shapeRule {
	return []shapeRule{
		{blocking.CustomerStatePrivateKey, "pem private key", regexp.MustCompile(`-----BEGIN ((RSA|EC|DSA|OPENSSH|ENCRYPTED|ENCRYPTED SIGSTORE|ENCRYPTED COSIGN|SIGSTORE|PGP) )?PRIVATE KEY( BLOCK)?-----`), []string{"private key"}},
		{blocking.CustomerStateJWT, "json web token", regexp.MustCompile(`eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*`), []string{"eyj"}},
		{blocking.CustomerStateToken, "aws access key id", regexp.MustCompile(`\b(AKIA|ASIA)[0-9A-Z]{16}\b`), []string{"akia", "asia"}},
		{blocking.CustomerStateToken, "github token", regexp.MustCompile(`\b(gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})`), []string{"gh", "github_pat_"}},
		{blocking.CustomerStateToken, "slack token", regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}`), []string{"xox"}},
		{blocking.CustomerStateToken, "stripe key", regexp.MustCompile(`\b(sk|rk|pk)_(live|test)_[A-Za-z0-9]{16,}`), []string{"_live_", "_test_"}},
		{blocking.CustomerStateToken, "google api key", regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}`), []string{"aiza"}},
		{blocking.CustomerStateToken, "openai or anthropic key", regexp.MustCompile(`\bsk-(ant-|proj-)?[A-Za-z0-9_-]{20,}`), []string{"sk-"}},
		{blocking.CustomerStateToken, "bearer credential", regexp.MustCompile(`(?i)\b(bearer|basic)\s+[A-Za-z0-9+/_=.-]{16,}`), []string{"bearer", "basic"}},
		{blocking.CustomerStateToken, "assigned secret", regexp.MustCompile(`(?i)\b(api[_-]?key|secret|token|password|passwd|pwd)\s*[:=]\s*["']?[^\s"']{6,}`), []string{"key", "secret", "token", "passw", "pwd"}},
		{blocking.CustomerStateCredURL, "url with user info", regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]*://[^/\s:@]+(:[^/\s@]*)?@`), []string{"://"}},
		{blocking.CustomerStateCredURL, "url with credential parameter", regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]*://[^\s?#]*\?[^\s#]*\b(token|access_token|api_key|apikey|key|secret|password|sig|signature)=`), []string{"://"}},
		// A shell-style NAME=VALUE whose name ends in a secret word
		// (SECRET_TOKEN=hunter2, DB_PASSWORD=x): short values count too. A
		// placeholder ($NAME, <token>, {token}) is not a value.
		{blocking.CustomerStateToken, "secret assigned to a name", regexp.MustCompile(`(?i)\b(?:[a-z0-9]+[_-])*(?:api[_-]?key|secret|token|password|passwd|pwd|credentials?)=["']?[^\s"'$<{=]`), []string{"key=", "secret=", "token=", "passw", "pwd=", "credential"}},
		{blocking.CustomerStateEmail, "email address", regexp.MustCompile(`(?i)\b[a-z0-9._%+-]+@[a-z0-9-]+(\.[a-z0-9-]+)*\.[a-z]{2,}\b`), []string{"@"}},
		// A US social security number (078-05-1120, 078 05 1120): three,
		// two and four digits, which the phone shape does not cover.
		{blocking.CustomerStateNationalID, "social security number", regexp.MustCompile(`\b\d{3}[- ]\d{2}[- ]\d{4}\b`), digits},
		{blocking.CustomerStatePhone, "phone number", regexp.MustCompile(`(\+\d{1,3}[\s.-]?)?(\(\d{2,4}\)[\s.-]?|\b\d{2,4}[\s.-])\d{3,4}[\s.-]\d{3,4}\b|\+\d{10,15}\b`), digits},
	}
})

var (
	digitRun = regexp.MustCompile(`\d{5,}`)
	// nameRule matches field names that refer to connections, accounts or
	// secrets: the package must never name what belongs to a host.
	nameRule = regexp.MustCompile(`(?i)(^|[_.-])(connection|conn|account|acct|password|passwd|pwd|secret|credentials?|api_?key|access_?token|refresh_?token|auth_?token|token)s?($|[_.-])|(?i)^(account|acct|connection|conn)(id|no|num|number|name|ref)s?$|(?i)(password|passwd|secret|apikey|accesstoken|authtoken)s?$`)
)

// ScanText returns the customer state found in text. prose says the text is
// written for people (a description, a persona, a skill doc), where runs of
// five or more digits are refused too; in expressions and patterns they are
// ordinary numbers.
//
// The text is scanned as written and in Unicode NFKC form, so compatibility
// characters (a full-width ＠ or ．, full-width digits) do not hide a
// shape; a finding in the normalized form is reported at the offset of
// the text as written where its match begins.
func ScanText(text string, prose bool) []Finding {
	out := scanText(text, prose)
	if isASCII(text) {
		return out
	}
	normalized, offsets := nfkc(text)
	if normalized == text {
		return out
	}
	seen := map[int]bool{}
	for _, f := range out {
		seen[f.Offset] = true
	}
	for _, f := range scanText(normalized, prose) {
		f.Offset = offsets[f.Offset]
		if !seen[f.Offset] {
			seen[f.Offset] = true
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(a, b Finding) int { return a.Offset - b.Offset })
	return out
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// nfkc returns text in NFKC form and, for each byte of it (and one past
// the end), the offset in text of the segment it came from.
func nfkc(text string) (string, []int) {
	var b strings.Builder
	offsets := make([]int, 0, len(text)+1)
	var it norm.Iter
	it.InitString(norm.NFKC, text)
	for !it.Done() {
		start := it.Pos()
		seg := it.Next()
		b.Write(seg)
		for range seg {
			offsets = append(offsets, start)
		}
	}
	offsets = append(offsets, len(text))
	return b.String(), offsets
}

// scanText is ScanText on text as it is.
func scanText(text string, prose bool) []Finding {
	var out []Finding
	type span struct{ start, end int }
	var used []span
	add := func(code blocking.Code, rule string, loc []int) {
		for _, u := range used {
			if loc[0] < u.end && u.start < loc[1] {
				return
			}
		}
		used = append(used, span{loc[0], loc[1]})
		out = append(out, Finding{Code: code, Offset: loc[0], Rule: rule})
	}
	lower := strings.ToLower(text)
	for _, r := range textRules() {
		if !r.mayMatch(lower) {
			continue
		}
		for _, loc := range r.re.FindAllStringIndex(text, -1) {
			add(r.code, r.rule, loc)
		}
	}
	for _, loc := range tokenRuns(text, minTokenRun) {
		if highEntropy(text[loc[0]:loc[1]]) {
			add(blocking.CustomerStateHighEntropy, "high-entropy string", loc)
		}
	}
	if prose && strings.ContainsAny(text, "0123456789") {
		for _, loc := range digitRun.FindAllStringIndex(text, -1) {
			add(blocking.CustomerStateDigitRun, "run of five or more digits", loc)
		}
	}
	slices.SortFunc(out, func(a, b Finding) int { return a.Offset - b.Offset })
	return out
}

// minTokenRun is the shortest run of token characters that may be a
// high-entropy secret.
const minTokenRun = 24

// tokenRuns returns the [start, end) spans of runs of at least min token
// characters ([A-Za-z0-9+/_=-]): the candidates for the entropy rule. A
// byte loop, as this runs over every byte of every text a package carries.
func tokenRuns(text string, min int) [][]int {
	var runs [][]int
	start := -1
	for i := 0; i <= len(text); i++ {
		if i < len(text) && isTokenByte(text[i]) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 && i-start >= min {
			runs = append(runs, []int{start, i})
		}
		start = -1
	}
	return runs
}

func isTokenByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '_' || c == '=' || c == '-'
}

// ScanName reports whether a field name refers to a connection, an account,
// a password or another secret, and if so returns the finding.
func ScanName(name string) (Finding, bool) {
	if nameRule.MatchString(name) {
		return Finding{Code: blocking.CustomerStateFieldName, Rule: "field name refers to host-owned state"}, true
	}
	return Finding{}, false
}

// highEntropy reports whether s looks like a random secret: long, mixing
// letters and digits, and with more than 4.2 bits of Shannon entropy per
// character. Hex digests (at most 4 bits) and words do not qualify.
func highEntropy(s string) bool {
	var lower, upper, digit bool
	counts := map[rune]int{}
	for _, r := range s {
		counts[r]++
		switch {
		case r >= 'a' && r <= 'z':
			lower = true
		case r >= 'A' && r <= 'Z':
			upper = true
		case r >= '0' && r <= '9':
			digit = true
		}
	}
	if !digit || !(lower || upper) || !(lower && upper) && len(s) < 40 {
		return false
	}
	n := float64(len(s))
	var h float64
	for _, c := range counts {
		p := float64(c) / n
		h -= p * math.Log2(p)
	}
	return h > 4.2
}

// ScanWorker returns the customer state found anywhere in w: in every text
// it carries and in the names of its capabilities, jobs, inputs and
// evaluators. It is how an IR from anywhere is checked again after compile.
func ScanWorker(w *Worker) []Problem {
	var problems []Problem
	text := func(s string, prose bool, path ...string) {
		for _, f := range ScanText(s, prose) {
			problems = append(problems, Problem{Code: f.Code, Path: path, Detail: "rule: " + f.Rule + " at byte " + strconv.Itoa(f.Offset)})
		}
	}
	name := func(s string, path ...string) {
		if f, bad := ScanName(s); bad {
			problems = append(problems, Problem{Code: f.Code, Path: path, Detail: "rule: " + f.Rule})
		}
	}
	text(w.Responsibility, true, "responsibility")
	for _, c := range w.Capabilities {
		name(c.Key, "capabilities", c.Key)
		text(c.Description, true, "capabilities", c.Key, "description")
	}
	for _, j := range w.Jobs {
		name(j.Name, "jobs", j.Name)
		text(j.Purpose, true, "jobs", j.Name, "purpose")
		text(j.DoneMeans, true, "jobs", j.Name, "doneMeans")
		for _, in := range slices.Sorted(maps.Keys(j.InputSchema.Properties)) {
			p := j.InputSchema.Properties[in]
			name(in, "jobs", j.Name, "inputSchema", "properties", in)
			text(p.Description, true, "jobs", j.Name, "inputSchema", "properties", in, "description")
			text(p.Pattern+" "+strings.Join(p.Enum, " "), false, "jobs", j.Name, "inputSchema", "properties", in)
		}
	}
	for _, e := range w.Evaluators {
		name(e.Name, "evaluators", e.Name)
		text(e.Source, false, "evaluators", e.Name, "source")
	}
	text(w.Persona.Text, true, "persona", "text")
	for _, d := range w.Skills {
		text(d.Text, true, "skills", d.Name, "text")
	}
	return problems
}
