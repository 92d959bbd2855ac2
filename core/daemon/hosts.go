package daemon

import (
	"net/http"

	"github.com/kandev/kandev/core"
)

// hostRoutes serves core.HostClient (docs/hosts.md).
func (h *Handler) hostRoutes(m *http.ServeMux) {
	m.HandleFunc("GET /v1/hosts", func(w http.ResponseWriter, r *http.Request) {
		hs, err := h.eng.ListHosts(r.Context())
		reply(w, hs, err)
	})
	m.HandleFunc("POST /v1/hosts", func(w http.ResponseWriter, r *http.Request) {
		var in core.HostInput
		if err := decode(r, &in); err != nil {
			writeErr(w, err)
			return
		}
		host, err := h.eng.AddHost(r.Context(), in)
		reply(w, host, err)
	})
	m.HandleFunc("GET /v1/hosts/{name}", func(w http.ResponseWriter, r *http.Request) {
		host, err := h.eng.GetHost(r.Context(), r.PathValue("name"))
		reply(w, host, err)
	})
	m.HandleFunc("DELETE /v1/hosts/{name}", func(w http.ResponseWriter, r *http.Request) {
		host, err := h.eng.RemoveHost(r.Context(), r.PathValue("name"))
		reply(w, host, err)
	})
	m.HandleFunc("POST /v1/hosts/{name}/check", func(w http.ResponseWriter, r *http.Request) {
		c, err := h.eng.CheckHost(r.Context(), r.PathValue("name"))
		reply(w, c, err)
	})
}
