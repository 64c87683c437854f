package connector

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxContentBytes bounds the content blocks of one answer that a
// CallResult keeps (their JSON, in all): an answer longer than that keeps
// the blocks that fit whole, the next text block cut to fit, and says so
// (ContentCut). 256 KiB is far more than an agent reads in one answer,
// and little enough to hold per read in flight.
const MaxContentBytes = 256 << 10

// ContentBound is MaxContentBytes in words, as a result names the bound
// it hit.
const ContentBound = "256 KiB"

// keepContent is the JSON array of blocks, each as MCP defines it (text,
// image, audio, resource_link, resource), bounded by MaxContentBytes; cut
// is true when blocks or text were left out. nil when there are none.
func keepContent(blocks []mcp.Content) (out json.RawMessage, cut bool) {
	if len(blocks) == 0 {
		return nil, false
	}
	buf := make([]byte, 0, 64)
	buf = append(buf, '[')
	for _, b := range blocks {
		if b == nil {
			continue
		}
		j, err := b.MarshalJSON()
		if err != nil {
			continue // the go-sdk decoded it, so it encodes: never reached
		}
		room := MaxContentBytes - len(buf) - 2 // a comma and the closing ]
		if len(j) > room {
			if t, ok := b.(*mcp.TextContent); ok {
				if j, ok = cutText(t, room); ok {
					buf = appendBlock(buf, j)
				}
			}
			cut = true
			break
		}
		buf = appendBlock(buf, j)
	}
	return append(buf, ']'), cut
}

func appendBlock(buf, j []byte) []byte {
	if len(buf) > 1 {
		buf = append(buf, ',')
	}
	return append(buf, j...)
}

// cutText is t with its text cut (at a character boundary) so that its
// JSON fits in room bytes; false when not even an empty text fits.
func cutText(t *mcp.TextContent, room int) ([]byte, bool) {
	n := min(len(t.Text), room)
	for n >= 0 {
		for n > 0 && n < len(t.Text) && !utf8.RuneStart(t.Text[n]) {
			n--
		}
		c := *t
		c.Text = t.Text[:n]
		j, err := c.MarshalJSON()
		if err != nil {
			return nil, false
		}
		if len(j) <= room {
			return j, true
		}
		if n == 0 {
			return nil, false
		}
		// Escaping made it longer than its bytes: take off the excess.
		n -= max(len(j)-room, 1)
		n = max(n, 0)
	}
	return nil, false
}

// Text is the text of the answer's text blocks, joined by newlines, and
// whether it has any. A cut answer's text is cut.
func (r *CallResult) Text() (string, bool) {
	if r == nil || len(r.Content) == 0 {
		return "", false
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(r.Content, &blocks) != nil {
		return "", false
	}
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	if len(parts) == 0 {
		return "", false
	}
	return strings.Join(parts, "\n"), true
}
