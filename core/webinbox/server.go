// Package webinbox is the web inbox the daemon serves when web_listen is
// set (docs/web.md, ADRs 0079 and 0080): one server-rendered page of what
// needs you, usable from a phone, for paired devices only. Every action
// calls the daemon's operations through its client (the operation table
// the CLI and the TUI use), as the person; the device it came from is
// recorded beside it (Devices.Record).
package webinbox

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/textsafe"
	"github.com/kandev/kandev/core/wire"
)

//go:embed assets
var assets embed.FS

// CookieName is the device credential's cookie.
const CookieName = "kandev_device"

// cookieMaxAge is as long as browsers keep a cookie (400 days); revoking
// the device ends it sooner.
const cookieMaxAge = 400 * 24 * 60 * 60

// failLimit wrong pairing codes within failWindow lock the pairing form
// until the oldest of them is older than the window.
const (
	failLimit  = 5
	failWindow = time.Minute
)

// Client is what the inbox calls: the daemon's operations.
type Client interface {
	api.Client
	SetBudget(ctx context.Context, id string, in api.BudgetInput) (core.Task, error)
}

// Options configure a Server.
type Options struct {
	Devices *Devices
	Client  Client
	Logger  *slog.Logger
	// Secure marks the cookie Secure: the inbox is served over TLS
	// (itself or behind a proxy that terminates it).
	Secure bool
	// Now is the clock (tests).
	Now func() time.Time
}

// Server serves the inbox.
type Server struct {
	o    Options
	mux  *http.ServeMux
	tmpl *template.Template
	css  template.CSS
	csp  string

	mu    sync.Mutex
	fails []time.Time
}

// New builds the inbox's handler.
func New(o Options) (*Server, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	css, err := assets.ReadFile("assets/inbox.css")
	if err != nil {
		return nil, err
	}
	tmpl, err := template.New("").Funcs(funcs).ParseFS(assets, "assets/*.html")
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(css)
	s := &Server{o: o, mux: http.NewServeMux(), tmpl: tmpl, css: template.CSS(css),
		// Nothing but this server's own script and the one embedded style
		// sheet; no frames, no plugins, no other origin.
		csp: "default-src 'none'; script-src 'self'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) +
			"'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"}
	m := s.mux
	m.HandleFunc("GET /pair", s.pairForm)
	m.HandleFunc("POST /pair", s.pair)
	m.HandleFunc("GET /{$}", s.device(s.inbox))
	m.HandleFunc("GET /app.js", s.device(s.script))
	m.HandleFunc("GET /events", s.device(s.events))
	m.HandleFunc("GET /task/{id}", s.device(s.task))
	m.HandleFunc("POST /task/{id}/answer", s.change("answer", s.answer))
	m.HandleFunc("POST /task/{id}/message", s.change("message", s.message))
	m.HandleFunc("POST /task/{id}/stop", s.change("stop", s.stop))
	m.HandleFunc("POST /task/{id}/handback", s.change("handback", s.handback))
	m.HandleFunc("POST /task/{id}/budget", s.change("budget", s.budget))
	m.HandleFunc("POST /forget", s.change("forget", s.forget))
	return s, nil
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", s.csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	// A page another site opened or posted from never gets in, whatever
	// the cookie (SameSite=Strict keeps it from being sent anyway).
	if site := r.Header.Get("Sec-Fetch-Site"); site == "cross-site" {
		s.fail(w, r, http.StatusForbidden, "requests from other sites are refused")
		return
	}
	s.mux.ServeHTTP(w, r)
}

type session struct {
	Device     Device
	credential string
}

// device serves fn only to a paired, unrevoked device; anyone else is
// sent to the pairing form (a page) or refused (anything else).
func (s *Server) device(fn func(http.ResponseWriter, *http.Request, session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie(CookieName)
		var dev Device
		ok := false
		if err == nil {
			dev, ok = s.o.Devices.Authenticate(r.Context(), c.Value)
		}
		if !ok {
			if r.Method == http.MethodGet && (r.URL.Path == "/" || strings.HasPrefix(r.URL.Path, "/task/")) {
				http.Redirect(w, r, "/pair", http.StatusSeeOther)
				return
			}
			s.fail(w, r, http.StatusUnauthorized, "this browser is not paired (or was revoked): pair it with a code from kandev web pair")
			return
		}
		fn(w, r, session{Device: dev, credential: c.Value})
	}
}

// change serves a change: a paired device, its CSRF token, then fn,
// recorded as done from that device.
func (s *Server) change(action string, fn func(http.ResponseWriter, *http.Request, session) (string, error)) http.HandlerFunc {
	return s.device(func(w http.ResponseWriter, r *http.Request, ss session) {
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		if err := r.ParseForm(); err != nil {
			s.fail(w, r, http.StatusBadRequest, "bad form: "+err.Error())
			return
		}
		if !csrfOK(ss.credential, r.PostForm.Get("csrf")) {
			s.fail(w, r, http.StatusForbidden, "the form's token does not match this device's: reload the page and try again")
			return
		}
		taskID := r.PathValue("id")
		done, err := fn(w, r, ss)
		if err != nil {
			ce := core.AsError(err)
			s.fail(w, r, wire.HTTPStatus(ce.Code), ce.Message)
			return
		}
		if done == "" {
			return // fn replied itself
		}
		if err := s.o.Devices.Record(r.Context(), ss.Device, action, taskID); err != nil {
			s.o.Logger.Error("web inbox: record action", "device", ss.Device.ID, "action", action, "err", err)
		}
		s.o.Logger.Info("web inbox action", "device", ss.Device.ID, "device_name", ss.Device.Name, "action", action, "task", taskID)
		http.Redirect(w, r, done, http.StatusSeeOther)
	})
}

// page is what every template gets.
type page struct {
	Title  string
	CSS    template.CSS
	CSRF   string
	Device string
	Script bool
	Body   any
}

func (s *Server) render(w http.ResponseWriter, status int, name string, p page) {
	p.CSS = s.css
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	var b strings.Builder
	if err := s.tmpl.ExecuteTemplate(&b, name, p); err != nil {
		s.o.Logger.Error("web inbox: render", "template", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

// fail answers an error: a page for a browser, the text otherwise.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	s.render(w, status, "error.html", page{Title: http.StatusText(status), Body: textsafe.Clean(msg)})
}

// pairForm is the one page without a device.
func (s *Server) pairForm(w http.ResponseWriter, r *http.Request) {
	code := NormalizeCode(r.URL.Query().Get("code"))
	if len(code) != codeLen {
		code = ""
	}
	s.render(w, http.StatusOK, "pair.html", page{Title: "Pair this browser", Body: FormatCode(code)})
}

// locked reports whether too many wrong codes were tried lately.
func (s *Server) locked(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	keep := s.fails[:0]
	for _, t := range s.fails {
		if now.Sub(t) < failWindow {
			keep = append(keep, t)
		}
	}
	s.fails = keep
	return len(s.fails) >= failLimit
}

func (s *Server) failed(now time.Time) {
	s.mu.Lock()
	s.fails = append(s.fails, now)
	s.mu.Unlock()
}

func (s *Server) pair(w http.ResponseWriter, r *http.Request) {
	now := s.o.Now()
	if s.locked(now) {
		w.Header().Set("Retry-After", "60")
		s.fail(w, r, http.StatusTooManyRequests, "too many wrong pairing codes: wait a minute and try again")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	if err := r.ParseForm(); err != nil {
		s.fail(w, r, http.StatusBadRequest, "bad form")
		return
	}
	dev, err := s.o.Devices.Pair(r.Context(), r.PostForm.Get("code"))
	if errors.Is(err, ErrBadCode) {
		s.failed(now)
		s.o.Logger.Warn("web inbox: a wrong pairing code", "remote", r.RemoteAddr)
		s.fail(w, r, http.StatusForbidden, err.Error())
		return
	}
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	s.o.Logger.Info("web inbox: device paired", "device", dev.ID, "name", dev.Name, "remote", r.RemoteAddr)
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: dev.Credential, Path: "/", MaxAge: cookieMaxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.o.Secure || r.TLS != nil})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// forget drops this browser's cookie (the device stays listed until
// revoked: kandev web revoke).
func (s *Server) forget(w http.ResponseWriter, r *http.Request, ss session) (string, error) {
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.o.Secure || r.TLS != nil})
	return "/pair", nil
}

func (s *Server) script(w http.ResponseWriter, r *http.Request, _ session) {
	b, err := assets.ReadFile("assets/inbox.js")
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	_, _ = w.Write(b)
}

func (s *Server) inbox(w http.ResponseWriter, r *http.Request, ss session) {
	tasks, err := s.o.Client.ListTasks(r.Context(), api.ListTasksInput{})
	if err != nil {
		ce := core.AsError(err)
		s.fail(w, r, wire.HTTPStatus(ce.Code), ce.Message)
		return
	}
	v := inboxView{Items: Items(tasks), Done: doneNote(r.URL.Query().Get("done"), r.URL.Query().Get("task"))}
	p := page{Title: "kandev · needs you", CSRF: csrfToken(ss.credential), Device: ss.Device.Name, Script: true, Body: v}
	name := "inbox.html"
	if r.URL.Query().Get("part") == "items" {
		name = "items"
	}
	s.render(w, http.StatusOK, name, p)
}

// doneNote is the line an action's redirect shows: fixed words, the task
// id only as the server checked it.
func doneNote(done, task string) string {
	words := map[string]string{"answer": "Answered", "message": "Sent your message to", "stop": "Stopped",
		"handback": "Handed back", "budget": "Raised the budget of"}
	w, ok := words[done]
	if !ok || !validID(task) {
		return ""
	}
	return w + " " + task + "."
}

func validID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

func (s *Server) task(w http.ResponseWriter, r *http.Request, ss session) {
	id := r.PathValue("id")
	t, err := s.o.Client.GetTask(r.Context(), id)
	if err != nil {
		ce := core.AsError(err)
		s.fail(w, r, wire.HTTPStatus(ce.Code), ce.Message)
		return
	}
	all, err := s.o.Client.ListTasks(r.Context(), api.ListTasksInput{})
	if err != nil {
		ce := core.AsError(err)
		s.fail(w, r, wire.HTTPStatus(ce.Code), ce.Message)
		return
	}
	conv, err := s.o.Client.Conversation(r.Context(), t.ID, api.ConversationInput{Before: -1, Limit: conversationLimit})
	if err != nil {
		ce := core.AsError(err)
		s.fail(w, r, wire.HTTPStatus(ce.Code), ce.Message)
		return
	}
	v := taskView{Item: itemOf(&t, placeOf(&t, byID(all))), Messages: messagesOf(conv.Messages), Older: conv.Older}
	s.render(w, http.StatusOK, "task.html", page{Title: "kandev · " + v.Item.ID, CSRF: csrfToken(ss.credential),
		Device: ss.Device.Name, Body: v})
}

func redirectDone(action, id string) string {
	return "/?done=" + action + "&task=" + id
}

// answer answers the task's pending question or permission: exactly the
// options the person picked, nothing preselected.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, _ session) (string, error) {
	id := r.PathValue("id")
	f := r.PostForm
	n, err := strconv.Atoi(f.Get("parts"))
	if err != nil || n < 1 || n > 20 {
		return "", core.Errorf(core.CodeValidation, "the form names no question parts: reload the page")
	}
	in := api.AnswerInput{QuestionID: f.Get("question_id")}
	for i := range n {
		opt, text := strings.TrimSpace(f.Get(fmt.Sprintf("option%d", i))), strings.TrimSpace(f.Get(fmt.Sprintf("text%d", i)))
		switch {
		case opt != "" && text != "":
			return "", core.Errorf(core.CodeValidation, "part %d: pick an option or write an answer, not both", i+1)
		case opt != "":
			if _, err := strconv.Atoi(opt); err != nil {
				return "", core.Errorf(core.CodeValidation, "part %d: %q is not an option", i+1, opt)
			}
			in.Answers = append(in.Answers, opt)
		case text != "":
			in.Answers = append(in.Answers, text)
		default:
			return "", core.Errorf(core.CodeValidation, "part %d: pick an option or write an answer", i+1)
		}
	}
	if _, err := s.o.Client.AnswerQuestion(r.Context(), id, in); err != nil {
		return "", err
	}
	return redirectDone("answer", id), nil
}

func (s *Server) message(w http.ResponseWriter, r *http.Request, _ session) (string, error) {
	id := r.PathValue("id")
	text := strings.TrimSpace(r.PostForm.Get("text"))
	if text == "" {
		return "", core.Errorf(core.CodeValidation, "the message is empty")
	}
	if _, err := s.o.Client.MessageTask(r.Context(), id, api.MessageInput{Text: text}); err != nil {
		return "", err
	}
	return redirectDone("message", id), nil
}

func (s *Server) stop(w http.ResponseWriter, r *http.Request, _ session) (string, error) {
	id := r.PathValue("id")
	if _, err := s.o.Client.StopTask(r.Context(), id, api.StopTaskInput{}); err != nil {
		return "", err
	}
	return redirectDone("stop", id), nil
}

func (s *Server) handback(w http.ResponseWriter, r *http.Request, _ session) (string, error) {
	id := r.PathValue("id")
	in := api.HandoffInput{To: "back", Message: strings.TrimSpace(r.PostForm.Get("text"))}
	if _, err := s.o.Client.HandoffTask(r.Context(), id, in); err != nil {
		return "", err
	}
	return redirectDone("handback", id), nil
}

func (s *Server) budget(w http.ResponseWriter, r *http.Request, _ session) (string, error) {
	id := r.PathValue("id")
	in := api.BudgetInput{Add: strings.TrimSpace(r.PostForm.Get("add")), CutTurn: r.PostForm.Get("cut_turn")}
	if in.Add == "" {
		return "", core.Errorf(core.CodeValidation, "say how much to add, such as 5USD or 1M-tokens")
	}
	if _, err := s.o.Client.SetBudget(r.Context(), id, in); err != nil {
		return "", err
	}
	return redirectDone("budget", id), nil
}

// events tells the page that something changed, never what: the page
// reloads its list, so no agent text travels outside a rendered page.
func (s *Server) events(w http.ResponseWriter, r *http.Request, _ session) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	ch, err := s.o.Client.Events(ctx, api.EventsInput{Appends: api.AppendsNone})
	if err != nil {
		ce := core.AsError(err)
		http.Error(w, ce.Message, wire.HTTPStatus(ce.Code))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, ": kandev web inbox\n\n")
	fl.Flush()
	tick := time.NewTicker(15 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			fmt.Fprint(w, ": keep-alive\n\n")
			fl.Flush()
		case ev, ok := <-ch:
			if !ok {
				return
			}
			switch ev.Type {
			case core.EventTaskCreated, core.EventTaskUpdated, core.EventQuestionUpdated, core.EventNeedsYou,
				core.EventSessionUpdated, core.EventResync:
				fmt.Fprintf(w, "event: change\ndata: %d\n\n", ev.Seq)
				fl.Flush()
			}
		}
	}
}
