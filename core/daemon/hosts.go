package daemon

import (
	"net/http"

	"github.com/kandev/kandev/core/wire"
)

// hostRoutes serves core.HostClient (docs/hosts.md).
func (h *Handler) hostRoutes(m *http.ServeMux) {
	route(m, wire.ListHosts, none(h.eng.ListHosts))
	route(m, wire.AddHost, h.eng.AddHost)
	route(m, wire.GetHost, key(h.eng.GetHost))
	route(m, wire.RemoveHost, key(h.eng.RemoveHost))
	route(m, wire.CheckHost, key(h.eng.CheckHost))
	route(m, wire.EditHost, keyed(h.eng.EditHost))
}
