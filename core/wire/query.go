package wire

import (
	"net/url"
	"strconv"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

// The inputs that travel in a GET's query. Each is a core input under
// another name, so that it can carry the query's encoding: converting
// between the two costs nothing. The encodings are the ones the daemon
// has always read; the refusals keep their words.

// ListQuery is api.ListTasksInput as ?all=1&root=ID.
type ListQuery api.ListTasksInput

func (q *ListQuery) query() url.Values {
	v := url.Values{}
	if q.All {
		v.Set("all", "1")
	}
	if q.Root != "" {
		v.Set("root", q.Root)
	}
	return v
}

func (q *ListQuery) parseQuery(v url.Values) error {
	*q = ListQuery{All: v.Get("all") == "1", Root: v.Get("root")}
	return nil
}

// ConversationQuery is api.ConversationInput as
// ?after=N&before=N&limit=N (after always, the others when set).
type ConversationQuery api.ConversationInput

func (q *ConversationQuery) query() url.Values {
	v := url.Values{"after": {strconv.FormatInt(q.After, 10)}}
	if q.Before != 0 {
		v.Set("before", strconv.FormatInt(q.Before, 10))
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	return v
}

func (q *ConversationQuery) parseQuery(v url.Values) error {
	*q = ConversationQuery{}
	if s := v.Get("after"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return core.Errorf(core.CodeValidation, "after: %q is not a number", s)
		}
		q.After = n
	}
	if s := v.Get("before"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return core.Errorf(core.CodeValidation, "before: %q is not a number", s)
		}
		q.Before = n
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return core.Errorf(core.CodeValidation, "limit: %q is not a number", s)
		}
		q.Limit = n
	}
	return nil
}

// DiffQuery is api.DiffInput as ?patch=1.
type DiffQuery api.DiffInput

func (q *DiffQuery) query() url.Values {
	v := url.Values{}
	if q.Patch {
		v.Set("patch", "1")
	}
	return v
}

func (q *DiffQuery) parseQuery(v url.Values) error {
	*q = DiffQuery{Patch: v.Get("patch") == "1"}
	return nil
}

// UsageQuery is api.UsageInput as ?by=task|profile|day&since=RFC3339.
type UsageQuery api.UsageInput

func (q *UsageQuery) query() url.Values {
	v := url.Values{}
	if q.By != "" {
		v.Set("by", q.By)
	}
	if !q.Since.IsZero() {
		v.Set("since", q.Since.UTC().Format(time.RFC3339Nano))
	}
	return v
}

func (q *UsageQuery) parseQuery(v url.Values) error {
	*q = UsageQuery{By: v.Get("by")}
	if s := v.Get("since"); s != "" {
		at, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return core.Errorf(core.CodeValidation, "since %q is not an RFC 3339 time", s)
		}
		q.Since = at
	}
	return nil
}
