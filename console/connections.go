package console

import (
	"net/http"
	"strings"

	"github.com/oa-dev/oa/connection"
	"github.com/oa-dev/oa/internal/escape"
)

// ConnectionRow is one connection as the Connections page shows it: its
// view (connection.View, as oa connection show prints it) with the level
// its server is held to on this host now.
type ConnectionRow struct {
	connection.View
	// LevelNow is the level in words: the guarantees held, those not
	// held and why, or the refusal code when the host cannot confine it.
	LevelNow string
	// NeedsLogin says an OAuth connection has no usable stored login
	// (connection.StoredLogin: none stored, or LoginProblem names why the
	// stored one cannot be used): a person runs oa connection login NAME.
	NeedsLogin   bool
	LoginProblem string
}

func (s *Server) serveConnections(w http.ResponseWriter, r *http.Request, sess *session) {
	listed, err := connection.List(r.Context(), s.h)
	if err != nil {
		s.refuse(w, r, sess, http.StatusInternalServerError, err)
		return
	}
	rows := make([]ConnectionRow, 0, len(listed))
	for _, l := range listed {
		row := ConnectionRow{View: connection.ViewOf(l.Name, l.Record)}
		row.Confinement = escape.OneLine(row.Confinement)
		if l.Record != nil {
			if row.Login = connection.StoredLogin(s.h.Home, l.Record); row.Login != nil {
				row.NeedsLogin, row.LoginProblem = !row.Login.Stored || row.Login.Problem != "", string(row.Login.Problem)
			}
		}
		switch lv := connection.LevelNow(l.Record); {
		case lv == nil:
			row.LevelNow = "no confined process of it runs here"
		case lv.Refused != "":
			row.LevelNow = "cannot be confined here: " + string(lv.Refused)
		default:
			row.LevelNow = strings.Join(lv.Guarantees, ", ")
			if len(lv.NotHeld) > 0 {
				row.LevelNow += "; not held: " + strings.Join(lv.NotHeld, "; ")
			}
		}
		rows = append(rows, row)
	}
	s.render(w, r, sess, http.StatusOK, "connections", rows)
}
