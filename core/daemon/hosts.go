package daemon

import (
	"net/http"

	"github.com/kandev/kandev/core/engine"
	"github.com/kandev/kandev/core/wire"
)

// hostRoutes serves api.HostClient (docs/hosts.md).
func hostRoutes(m *http.ServeMux, eng *engine.Engine) {
	route(m, wire.ListHosts, none(eng.Hosts.List))
	route(m, wire.AddHost, eng.Hosts.Add)
	route(m, wire.GetHost, key(eng.Hosts.Get))
	route(m, wire.RemoveHost, key(eng.Hosts.Remove))
	route(m, wire.CheckHost, key(eng.Hosts.Check))
	route(m, wire.EditHost, keyed(eng.Hosts.Edit))
}
