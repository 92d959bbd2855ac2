package daemon

import (
	"net/http"
	"time"

	"github.com/kandev/kandev/core"
)

// setBudget fixes or raises a task's budget: on the operator's socket
// only (the agents' socket serves MCP routes alone), and the engine
// refuses anyone but a person.
func (h *Handler) setBudget(w http.ResponseWriter, r *http.Request) {
	var in core.BudgetInput
	if err := decode(r, &in); err != nil {
		writeErr(w, err)
		return
	}
	t, err := h.eng.SetBudget(r.Context(), r.PathValue("id"), in)
	reply(w, t, err)
}

// usage reports recorded spend: ?since=RFC3339&by=task|profile|day.
func (h *Handler) usage(w http.ResponseWriter, r *http.Request) {
	in := core.UsageInput{By: r.URL.Query().Get("by")}
	if s := r.URL.Query().Get("since"); s != "" {
		at, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			writeErr(w, core.Errorf(core.CodeValidation, "since %q is not an RFC 3339 time", s))
			return
		}
		in.Since = at
	}
	rep, err := h.eng.Usage(r.Context(), in)
	reply(w, rep, err)
}
