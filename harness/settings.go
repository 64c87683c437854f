package harness

import (
	"context"
	"slices"
	"strings"

	"github.com/oa-dev/oa/bind"
	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connection"
	"github.com/oa-dev/oa/host"
)

// CheckSettings is the check that every variable the bound plan's
// connections take from oa's environment (--env NAME) is set by the
// client's server entry: a client starts oa with the entry's environment,
// and install writes only OA_HOME there.
const CheckSettings = "settings"

// checkSettings names the variables the bound plan's stdio connections
// take from oa's environment that the client's oa-NAME entry does not set
// (connection_setting_missing): the coordinator the client starts could
// not start their servers, and every run needing one would end
// did_not_run/app_setting_missing. It names variables and connections,
// never a value. An entry that cannot be read is server_entry's to report.
func (m *MCPClient) checkSettings(ctx context.Context, h *host.Host, b *bind.Binding, rec *Record) (*blocking.Error, error) {
	cfg, err := m.readConfig(m.layout(b.Deployment, ""))
	b2, exists := cfg.data, cfg.exists
	if err != nil || !exists {
		return nil, nil
	}
	e, err := m.spec.format.get(m.path(rec.Server.File), b2, rec.Server.Name)
	if err != nil || e == nil {
		return nil, nil
	}
	var missing []string
	var seen []string
	for _, c := range b.Plan.Capabilities {
		if slices.Contains(seen, c.ConnectionID) {
			continue
		}
		seen = append(seen, c.ConnectionID)
		conn, err := connection.Get(ctx, h, c.ConnectionID)
		if refusal, ferr := asRefusal(err); ferr != nil {
			return nil, ferr
		} else if refusal != nil {
			continue // the binding check names a connection that changed
		}
		for _, name := range conn.Config.Env {
			if _, ok := e.Env[name]; !ok {
				missing = append(missing, name+" (connection "+conn.Name+")")
			}
		}
	}
	if len(missing) == 0 {
		return nil, nil
	}
	return blocking.New(blocking.ConnectionSettingMissing, "the %s entry does not set %s, taken from oa's environment (--env): the client starts oa without it; record a plain setting with oa connection add-stdio … --env NAME=VALUE --replace, or set it in the entry's env", rec.Server.Name, strings.Join(missing, ", ")), nil
}
