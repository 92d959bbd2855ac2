package webinbox

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/store"
)

// fakeClient is the daemon's operations as the inbox calls them; the
// operations it does not call panic (the embedded nil interface).
type fakeClient struct {
	api.Client
	mu    sync.Mutex
	tasks []core.Task
	calls []string
	ins   []any
}

func (f *fakeClient) record(name string, in any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, name)
	f.ins = append(f.ins, in)
}

func (f *fakeClient) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeClient) last() any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ins[len(f.ins)-1]
}

func (f *fakeClient) ListTasks(context.Context, api.ListTasksInput) ([]core.Task, error) {
	return f.tasks, nil
}

func (f *fakeClient) GetTask(_ context.Context, id string) (core.Task, error) {
	for _, t := range f.tasks {
		if t.ID == id {
			return t, nil
		}
	}
	return core.Task{}, core.Errorf(core.CodeNotFound, "no task %s", id)
}

func (f *fakeClient) Conversation(_ context.Context, id string, _ api.ConversationInput) (api.ConversationPage, error) {
	return api.ConversationPage{TaskID: id, Messages: []core.Message{
		{Kind: core.MsgAgent, Author: core.ByRef(core.TaskRef(id)), Text: hostile, CreatedAt: time.Now()},
	}}, nil
}

func (f *fakeClient) AnswerQuestion(_ context.Context, id string, in api.AnswerInput) (api.AnswerResult, error) {
	f.record("answer "+id, in)
	return api.AnswerResult{TaskID: id}, nil
}

func (f *fakeClient) MessageTask(_ context.Context, id string, in api.MessageInput) (api.MessageResult, error) {
	f.record("message "+id, in)
	return api.MessageResult{}, nil
}

func (f *fakeClient) StopTask(_ context.Context, id string, in api.StopTaskInput) (api.StopResult, error) {
	f.record("stop "+id, in)
	return api.StopResult{TaskID: id}, nil
}

func (f *fakeClient) HandoffTask(_ context.Context, id string, in api.HandoffInput) (api.HandoffResult, error) {
	f.record("handoff "+id, in)
	return api.HandoffResult{TaskID: id}, nil
}

func (f *fakeClient) SetBudget(_ context.Context, id string, in api.BudgetInput) (core.Task, error) {
	f.record("budget "+id, in)
	return core.Task{ID: id}, nil
}

func (f *fakeClient) Events(ctx context.Context, _ api.EventsInput) (<-chan core.Event, error) {
	ch := make(chan core.Event, 1)
	ch <- core.Event{Seq: 7, Type: core.EventTaskUpdated, Task: &core.Task{Title: hostile}}
	go func() { <-ctx.Done(); close(ch) }()
	return ch, nil
}

// hostile is agent-written text that tries markup, script, an attribute
// break-out and a right-to-left override.
const hostile = "<script>alert('x')</script><img src=x onerror=alert(1)>\"' \u202Eevil\u202C \u2066iso\u2069 </pre></textarea>"

func hostileTasks() []core.Task {
	now := time.Now()
	run := &core.SessionInfo{ID: "s1", State: core.SessionRunning}
	return []core.Task{
		{ID: "root01", Title: "Root " + hostile, Status: core.StatusInProgress},
		{ID: "rev001", Title: "For review", Status: core.StatusInProgress, YourTurn: true,
			Assignee: refp(core.PersonRef(core.Operator)), HandedBy: refp(core.RoleRef("eng"))},
		{ID: "que001", ParentID: "root01", Title: "Asks " + hostile, Status: core.StatusInProgress,
			PendingQuestion: &core.QuestionInfo{ID: "q1", Kind: core.QuestionUser, Status: core.QuestionPending, Text: hostile, AskedAt: now,
				Questions: []core.QuestionItem{{Prompt: "Pick " + hostile, Options: []core.QuestionOption{{Label: "A " + hostile}, {Label: "B", Description: hostile}}}}}},
		{ID: "per001", Title: "Wants a tool", Status: core.StatusInProgress, Session: run,
			PendingQuestion: &core.QuestionInfo{ID: "p1", Kind: core.QuestionPermission, Status: core.QuestionPending, AskedAt: now,
				Tool:      &core.PermissionTool{Title: "Run " + hostile, Kind: "execute", Input: `{"cmd":"` + hostile + `"}`},
				Questions: []core.QuestionItem{{Options: []core.QuestionOption{{Label: "Allow once", Description: "allow_once"}, {Label: "Allow always", Description: "allow_always"}, {Label: "Reject", Description: "reject_once"}}}}}},
		{ID: "esc001", Title: "Escalated", Status: core.StatusInProgress, YourTurn: true, Assignee: refp(core.PersonRef(core.Operator)),
			HandedBy: refp(core.RoleRef("eng")),
			Stalled:  &core.Stall{Reason: "Stalled", From: core.ByRef(core.RoleRef("eng")), Detail: "Last words: " + hostile, At: now}},
		{ID: "bud001", Title: "Spent", Status: core.StatusInProgress, YourTurn: true, Assignee: refp(core.PersonRef(core.Operator)),
			Stalled: &core.Stall{Reason: core.StallBudget, Detail: "budget reached", At: now},
			Budget:  &core.BudgetInfo{Holder: "bud001", Amount: core.Amount{Kind: core.BudgetCost, Value: 5, Currency: "USD"}, Spent: 5.2, Reached: true}},
	}
}

func refp(r core.Ref) *core.Ref { return &r }

type fixture struct {
	t       *testing.T
	srv     *Server
	client  *fakeClient
	devices *Devices
	db      *store.DB
	now     time.Time
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "kandev.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	fx := &fixture{t: t, client: &fakeClient{tasks: hostileTasks()}, db: db, now: time.Now()}
	fx.devices = NewDevices(db)
	fx.devices.now = func() time.Time { return fx.now }
	srv, err := New(Options{Devices: fx.devices, Client: fx.client, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Now: func() time.Time { return fx.now }})
	if err != nil {
		t.Fatal(err)
	}
	fx.srv = srv
	return fx
}

type resp struct {
	code int
	body string
	h    http.Header
	res  *http.Response
}

func (fx *fixture) do(method, path string, cookie string, form url.Values, hdr ...string) resp {
	fx.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	r := httptest.NewRequest(method, path, body)
	if form != nil {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if cookie != "" {
		r.AddCookie(&http.Cookie{Name: CookieName, Value: cookie})
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	fx.srv.ServeHTTP(w, r)
	res := w.Result()
	return resp{code: w.Code, body: w.Body.String(), h: w.Header(), res: res}
}

// pair makes a code and exchanges it, returning the credential.
func (fx *fixture) pair(name string) string {
	fx.t.Helper()
	code, _, err := fx.devices.NewCode(context.Background(), name)
	if err != nil {
		fx.t.Fatal(err)
	}
	r := fx.do("POST", "/pair", "", url.Values{"code": {FormatCode(code)}})
	if r.code != http.StatusSeeOther {
		fx.t.Fatalf("pair: %d %s", r.code, r.body)
	}
	for _, c := range r.res.Cookies() {
		if c.Name == CookieName {
			return c.Value
		}
	}
	fx.t.Fatal("pair set no cookie")
	return ""
}

// endpoints lists every route of the inbox but the pairing form.
var endpoints = []struct{ method, path string }{
	{"GET", "/"}, {"GET", "/?part=items"}, {"GET", "/app.js"}, {"GET", "/events"}, {"GET", "/task/que001"},
	{"POST", "/task/que001/answer"}, {"POST", "/task/que001/message"}, {"POST", "/task/que001/stop"},
	{"POST", "/task/esc001/handback"}, {"POST", "/task/bud001/budget"}, {"POST", "/forget"},
}

// validForms fills each change's form as a person would.
func validForm(path, csrf string) url.Values {
	v := url.Values{"csrf": {csrf}}
	switch {
	case strings.HasSuffix(path, "/answer"):
		v.Set("parts", "1")
		v.Set("question_id", "q1")
		v.Set("option0", "2")
	case strings.HasSuffix(path, "/message"):
		v.Set("text", "carry on")
	case strings.HasSuffix(path, "/budget"):
		v.Set("add", "5USD")
		v.Set("cut_turn", "redeliver")
	}
	return v
}

func TestNothingOpensWithoutADevice(t *testing.T) {
	fx := newFixture(t)
	for _, cookie := range []string{"", "not-a-credential"} {
		for _, e := range endpoints {
			var form url.Values
			if e.method == "POST" {
				form = validForm(e.path, "whatever")
			}
			r := fx.do(e.method, e.path, cookie, form)
			switch {
			case e.method == "GET" && (e.path == "/" || strings.HasPrefix(e.path, "/task/") || e.path == "/?part=items"):
				if r.code != http.StatusSeeOther || r.h.Get("Location") != "/pair" {
					t.Errorf("%s %s (cookie %q): %d to %q, want 303 to /pair", e.method, e.path, cookie, r.code, r.h.Get("Location"))
				}
			case r.code != http.StatusUnauthorized:
				t.Errorf("%s %s (cookie %q): %d, want 401", e.method, e.path, cookie, r.code)
			}
			if strings.Contains(r.body, "que001") || strings.Contains(r.body, "Asks") {
				t.Errorf("%s %s without a device shows a task: %s", e.method, e.path, r.body)
			}
		}
	}
	if calls := fx.client.Calls(); len(calls) != 0 {
		t.Errorf("operations called without a device: %v", calls)
	}
	// The pairing form is the one page that opens.
	if r := fx.do("GET", "/pair", "", nil); r.code != http.StatusOK || !strings.Contains(r.body, `action="/pair"`) {
		t.Errorf("pairing form: %d %s", r.code, r.body)
	}
}

func TestEveryEndpointWithADevice(t *testing.T) {
	fx := newFixture(t)
	cred := fx.pair("phone")
	csrf := csrfToken(cred)
	for _, e := range endpoints {
		var form url.Values
		if e.method == "POST" {
			form = validForm(e.path, csrf)
		}
		if e.path == "/events" {
			continue // TestEventsCarryNoText
		}
		r := fx.do(e.method, e.path, cred, form)
		want := http.StatusOK
		if e.method == "POST" {
			want = http.StatusSeeOther
		}
		if r.code != want {
			t.Errorf("%s %s: %d, want %d: %s", e.method, e.path, r.code, want, r.body)
		}
	}
	want := []string{"answer que001", "message que001", "stop que001", "handoff esc001", "budget bud001"}
	if got := fx.client.Calls(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("operations: %v, want %v", got, want)
	}
	// Each change is recorded as made from this device.
	ds, err := fx.devices.List(context.Background())
	if err != nil || len(ds) != 1 || ds[0].Actions != 6 || ds[0].Name != "phone" {
		t.Errorf("devices: %+v %v, want one phone with 6 actions (5 changes and a forget)", ds, err)
	}
}

func TestActionsSendExactlyWhatWasPicked(t *testing.T) {
	fx := newFixture(t)
	cred := fx.pair("phone")
	csrf := csrfToken(cred)
	post := func(path string, v url.Values) resp {
		v.Set("csrf", csrf)
		return fx.do("POST", path, cred, v)
	}
	if r := post("/task/que001/answer", url.Values{"parts": {"1"}, "question_id": {"q1"}, "option0": {"2"}}); r.code != http.StatusSeeOther {
		t.Fatalf("answer: %d %s", r.code, r.body)
	}
	if in := fx.client.last().(api.AnswerInput); in.QuestionID != "q1" || len(in.Answers) != 1 || in.Answers[0] != "2" {
		t.Errorf("answer sent %+v", in)
	}
	if r := post("/task/que001/answer", url.Values{"parts": {"1"}, "question_id": {"q1"}, "text0": {"my own words"}}); r.code != http.StatusSeeOther {
		t.Fatalf("answer: %d %s", r.code, r.body)
	}
	if in := fx.client.last().(api.AnswerInput); in.Answers[0] != "my own words" {
		t.Errorf("free answer sent %+v", in)
	}
	// Nothing picked, or both an option and text: refused, nothing sent.
	n := len(fx.client.Calls())
	for _, v := range []url.Values{
		{"parts": {"1"}, "question_id": {"q1"}},
		{"parts": {"1"}, "question_id": {"q1"}, "option0": {"1"}, "text0": {"and words"}},
		{"parts": {"1"}, "question_id": {"q1"}, "option0": {"one"}},
		{"question_id": {"q1"}, "option0": {"1"}},
	} {
		if r := post("/task/que001/answer", v); r.code != http.StatusBadRequest {
			t.Errorf("answer %v: %d, want 400", v, r.code)
		}
	}
	if r := post("/task/que001/message", url.Values{"text": {"  "}}); r.code != http.StatusBadRequest {
		t.Errorf("empty message: %d, want 400", r.code)
	}
	if r := post("/task/bud001/budget", url.Values{}); r.code != http.StatusBadRequest {
		t.Errorf("empty budget: %d, want 400", r.code)
	}
	if got := len(fx.client.Calls()); got != n {
		t.Errorf("refused forms called operations: %v", fx.client.Calls()[n:])
	}
	post("/task/bud001/budget", url.Values{"add": {"3USD"}, "cut_turn": {"continue"}})
	if in := fx.client.last().(api.BudgetInput); in.Add != "3USD" || in.CutTurn != "continue" || in.Set != "" {
		t.Errorf("budget sent %+v", in)
	}
	post("/task/esc001/handback", url.Values{"text": {"try again"}})
	if in := fx.client.last().(api.HandoffInput); in.To != "back" || in.Message != "try again" {
		t.Errorf("hand back sent %+v", in)
	}
}

func TestRevokedDeviceOpensNothing(t *testing.T) {
	fx := newFixture(t)
	cred := fx.pair("phone")
	other := fx.pair("laptop")
	w, err := fx.db.WebDeviceByToken(context.Background(), hashOf(cred))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fx.devices.Revoke(context.Background(), w.ID); err != nil {
		t.Fatal(err)
	}
	for _, e := range endpoints {
		var form url.Values
		if e.method == "POST" {
			form = validForm(e.path, csrfToken(cred))
		}
		r := fx.do(e.method, e.path, cred, form)
		if r.code != http.StatusSeeOther && r.code != http.StatusUnauthorized {
			t.Errorf("revoked: %s %s: %d", e.method, e.path, r.code)
		}
		if r.code == http.StatusSeeOther && r.h.Get("Location") != "/pair" {
			t.Errorf("revoked: %s %s went to %s", e.method, e.path, r.h.Get("Location"))
		}
	}
	if calls := fx.client.Calls(); len(calls) != 0 {
		t.Errorf("a revoked device called %v", calls)
	}
	// The other device still works.
	if r := fx.do("GET", "/", other, nil); r.code != http.StatusOK {
		t.Errorf("the other device: %d", r.code)
	}
	if _, err := fx.devices.Revoke(context.Background(), "nope"); core.AsError(err).Code != core.CodeNotFound {
		t.Errorf("revoking an unknown device: %v", err)
	}
}

func TestForgedCSRFIsRefused(t *testing.T) {
	fx := newFixture(t)
	cred := fx.pair("phone")
	other := fx.pair("laptop")
	for _, e := range endpoints {
		if e.method != "POST" {
			continue
		}
		for _, tok := range []string{"", "forged", csrfToken(other), csrfToken(cred) + "x"} {
			r := fx.do("POST", e.path, cred, validForm(e.path, tok))
			if r.code != http.StatusForbidden {
				t.Errorf("POST %s with token %q: %d, want 403", e.path, tok, r.code)
			}
		}
		// A request another site sent is refused whatever it carries.
		r := fx.do("POST", e.path, cred, validForm(e.path, csrfToken(cred)), "Sec-Fetch-Site", "cross-site")
		if r.code != http.StatusForbidden {
			t.Errorf("cross-site POST %s: %d, want 403", e.path, r.code)
		}
	}
	if calls := fx.client.Calls(); len(calls) != 0 {
		t.Errorf("forged requests called %v", calls)
	}
}

func TestHostileAgentTextIsInert(t *testing.T) {
	fx := newFixture(t)
	cred := fx.pair("phone")
	for _, path := range []string{"/", "/?part=items", "/task/que001", "/task/per001", "/task/esc001", "/task/root01"} {
		r := fx.do("GET", path, cred, nil)
		if r.code != http.StatusOK {
			t.Fatalf("%s: %d %s", path, r.code, r.body)
		}
		for _, bad := range []string{"<script>alert", "<img src=x", "onerror=alert(1)>", "\u202E", "\u2066", "</textarea></", "</pre></"} {
			if strings.Contains(r.body, bad) {
				t.Errorf("%s carries %q unescaped", path, bad)
			}
		}
		if !strings.Contains(r.body, "&lt;script&gt;alert(") {
			t.Errorf("%s does not show the hostile text escaped", path)
		}
		// The only script is the inbox's own.
		if n := strings.Count(r.body, "<script"); n > 1 {
			t.Errorf("%s has %d script elements", path, n)
		}
	}
}

func TestStrictContentSecurityPolicy(t *testing.T) {
	fx := newFixture(t)
	cred := fx.pair("phone")
	for _, c := range []string{"", cred} {
		r := fx.do("GET", "/pair", c, nil)
		if c != "" {
			r = fx.do("GET", "/", c, nil)
		}
		csp := r.h.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "frame-ancestors 'none'", "form-action 'self'", "base-uri 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("CSP %q lacks %q", csp, want)
			}
		}
		if strings.Contains(csp, "unsafe") {
			t.Errorf("CSP allows unsafe: %q", csp)
		}
		// The one style sheet is allowed by its hash.
		m := regexp.MustCompile(`(?s)<style>(.*?)</style>`).FindStringSubmatch(r.body)
		if m == nil {
			t.Fatal("no style")
		}
		sum := sha256.Sum256([]byte(m[1]))
		if want := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"; !strings.Contains(csp, "style-src "+want) {
			t.Errorf("CSP %q does not allow the page's style (%s)", csp, want)
		}
		if r.h.Get("X-Frame-Options") != "DENY" || r.h.Get("X-Content-Type-Options") != "nosniff" || r.h.Get("Cache-Control") != "no-store" {
			t.Errorf("headers: %v", r.h)
		}
	}
}

func TestPairingCookieAndOneTimeCodes(t *testing.T) {
	fx := newFixture(t)
	code, _, err := fx.devices.NewCode(context.Background(), "phone\u202E<b>")
	if err != nil {
		t.Fatal(err)
	}
	r := fx.do("POST", "/pair", "", url.Values{"code": {strings.ToLower(code)}})
	if r.code != http.StatusSeeOther {
		t.Fatalf("pair: %d %s", r.code, r.body)
	}
	var c *http.Cookie
	for _, k := range r.res.Cookies() {
		if k.Name == CookieName {
			c = k
		}
	}
	if c == nil || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || len(c.Value) < 40 {
		t.Fatalf("cookie %+v", c)
	}
	if c.Secure {
		t.Errorf("a plain-HTTP loopback inbox set a Secure cookie")
	}
	// Only the credential's hash is stored.
	ds, _ := fx.db.WebDevices(context.Background())
	if len(ds) != 1 || ds[0].TokenHash == c.Value || ds[0].TokenHash != hashOf(c.Value) || ds[0].Name != "phone<b>" {
		t.Errorf("stored device %+v", ds)
	}
	// The code worked once.
	if r := fx.do("POST", "/pair", "", url.Values{"code": {code}}); r.code != http.StatusForbidden {
		t.Errorf("a used code: %d", r.code)
	}
	// An expired code does not work.
	code2, _, _ := fx.devices.NewCode(context.Background(), "")
	fx.now = fx.now.Add(PairTTL + time.Second)
	if r := fx.do("POST", "/pair", "", url.Values{"code": {code2}}); r.code != http.StatusForbidden {
		t.Errorf("an expired code: %d", r.code)
	}
	// Behind TLS the cookie is Secure.
	srv, _ := New(Options{Devices: fx.devices, Client: fx.client, Secure: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	fx.srv = srv
	code3, _, _ := fx.devices.NewCode(context.Background(), "")
	r = fx.do("POST", "/pair", "", url.Values{"code": {code3}})
	if cs := r.res.Cookies(); len(cs) != 1 || !cs[0].Secure {
		t.Errorf("TLS cookie %+v", cs)
	}
}

func TestPairingAttemptsAreRateLimited(t *testing.T) {
	fx := newFixture(t)
	code, _, _ := fx.devices.NewCode(context.Background(), "phone")
	for i := range failLimit {
		if r := fx.do("POST", "/pair", "", url.Values{"code": {"WRONG-CODE"}}); r.code != http.StatusForbidden {
			t.Fatalf("wrong code %d: %d", i, r.code)
		}
	}
	// Locked: even the right code waits.
	r := fx.do("POST", "/pair", "", url.Values{"code": {code}})
	if r.code != http.StatusTooManyRequests || r.h.Get("Retry-After") == "" {
		t.Fatalf("after %d wrong codes: %d, want 429", failLimit, r.code)
	}
	fx.now = fx.now.Add(failWindow)
	if r := fx.do("POST", "/pair", "", url.Values{"code": {code}}); r.code != http.StatusSeeOther {
		t.Errorf("after the window: %d %s", r.code, r.body)
	}
}

func TestEventsCarryNoText(t *testing.T) {
	fx := newFixture(t)
	cred := fx.pair("phone")
	ts := httptest.NewServer(fx.srv)
	defer ts.Close()
	req, _ := http.NewRequest("GET", ts.URL+"/events", nil)
	req.AddCookie(&http.Cookie{Name: CookieName, Value: cred})
	res, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	buf := make([]byte, 0, 256)
	chunk := make([]byte, 256)
	for !strings.Contains(string(buf), "data: 7\n\n") {
		n, err := res.Body.Read(chunk)
		if err != nil {
			t.Fatalf("read events: %v (%q)", err, buf)
		}
		buf = append(buf, chunk[:n]...)
	}
	if strings.Contains(string(buf), "script") || !strings.Contains(string(buf), "event: change\n") {
		t.Errorf("events: %q", buf)
	}
}

func TestItemsRankedAsStatusRanksThem(t *testing.T) {
	items := Items(hostileTasks())
	var got []string
	for _, it := range items {
		got = append(got, it.ID+":"+it.Why)
	}
	want := "per001:permission,que001:question,esc001:escalated,bud001:budget,rev001:your turn"
	if strings.Join(got, ",") != want {
		t.Errorf("ranked %v, want %s", got, want)
	}
	if q := items[1]; len(q.Place) != 1 || !strings.HasPrefix(q.Place[0], "Root ") {
		t.Errorf("place of que001: %q", q.Place)
	}
	if b := items[3].Budget; b == nil || b.Spent != "5.20 USD" {
		t.Errorf("budget item: %+v", b)
	}
}
