package daemon

import (
	"net/http"

	"github.com/kandev/kandev/core/wire"
)

// hostRoutes serves core.HostClient (docs/hosts.md).
func (h *Handler) hostRoutes(m *http.ServeMux) {
	route(m, wire.ListHosts, none(h.eng.Hosts.List))
	route(m, wire.AddHost, h.eng.Hosts.Add)
	route(m, wire.GetHost, key(h.eng.Hosts.Get))
	route(m, wire.RemoveHost, key(h.eng.Hosts.Remove))
	route(m, wire.CheckHost, key(h.eng.Hosts.Check))
	route(m, wire.EditHost, keyed(h.eng.Hosts.Edit))
}
