package daemon

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/config"
	"github.com/kandev/kandev/core/daemonclient"
	"github.com/kandev/kandev/core/webinbox"
	"github.com/kandev/kandev/store"
)

// The web inbox (docs/web.md, ADRs 0079 and 0080): served on its own TCP
// address when web_listen (or serve --web) sets one. Its actions go
// through the operator's socket like any client's.

// webSettings are the web_* keys.
type webSettings struct {
	listen, url, cert, key string
	plain                  bool
}

func loadWebSettings(override string) (webSettings, error) {
	cfg, err := config.Load(os.Getenv)
	if err != nil {
		return webSettings{}, err
	}
	get := func(k string) string {
		if err != nil {
			return ""
		}
		var v config.Value
		v, err = cfg.Get(k)
		return strings.TrimSpace(v.Value)
	}
	ws := webSettings{listen: get("web_listen"), url: get("web_url"), cert: get("web_tls_cert"), key: get("web_tls_key")}
	plain := get("web_allow_plain_http")
	if err != nil {
		return webSettings{}, err
	}
	ws.plain, _ = strconv.ParseBool(plain)
	if override != "" {
		ws.listen = override
	}
	return ws, nil
}

// Loopback reports whether a listen address reaches this machine only:
// 127.0.0.0/8, ::1 or localhost. An empty host (":8421") is every
// interface.
func Loopback(addr string) (bool, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false, core.Errorf(core.CodeValidation, "web_listen %q is not host:port (such as 127.0.0.1:8421): %v", addr, err)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return false, core.Errorf(core.CodeValidation, "web_listen %q: %q is not a port", addr, port)
	}
	if host == "localhost" {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}

// plainHTTPWarning is what the daemon says, loudly, when it serves the
// inbox beyond loopback without TLS because web_allow_plain_http says so.
const plainHTTPWarning = "the web inbox is served over PLAIN HTTP beyond loopback (web_allow_plain_http): " +
	"anyone on the network path can read the pages and steal a device's cookie; use TLS (web_tls_cert, web_tls_key), " +
	"an SSH tunnel or Tailscale serve instead (docs/web.md)"

// check applies ADR 0080: loopback serves plain HTTP; beyond it TLS is
// required unless web_allow_plain_http accepts the risk (a warning).
func (ws webSettings) check() (tlsOn bool, warning string, err error) {
	if (ws.cert == "") != (ws.key == "") {
		return false, "", core.Errorf(core.CodeValidation, "web_tls_cert and web_tls_key go together: set both or neither")
	}
	tlsOn = ws.cert != ""
	lo, err := Loopback(ws.listen)
	if err != nil {
		return false, "", err
	}
	if lo || tlsOn {
		return tlsOn, "", nil
	}
	if !ws.plain {
		return false, "", core.Errorf(core.CodeValidation,
			"web_listen %s reaches beyond this machine: give it TLS (web_tls_cert and web_tls_key), or listen on 127.0.0.1 and reach it through an SSH tunnel, Tailscale serve or a TLS proxy (docs/web.md); web_allow_plain_http=true serves it over plain HTTP anyway", ws.listen)
	}
	return false, plainHTTPWarning, nil
}

// baseURL is where a phone opens the inbox: web_url, else the address
// listened on (its port the one picked for port 0).
func (ws webSettings) baseURL(tlsOn bool, bound string) string {
	if ws.url != "" {
		return strings.TrimRight(ws.url, "/")
	}
	host, port, _ := net.SplitHostPort(ws.listen)
	if _, p, err := net.SplitHostPort(bound); err == nil {
		port = p
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		if h, err := os.Hostname(); err == nil {
			host = h
		}
	}
	scheme := "http"
	if tlsOn {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

// webState is the daemon's side of the inbox: the devices (always, so
// devices can be listed and revoked with the inbox off) and, when on,
// its address.
type webState struct {
	devices *webinbox.Devices
	on      bool
	url     string
	warning string
}

// link is a task's page on the inbox, "" when it is off.
func (w *webState) link(taskID string) string {
	if w == nil || !w.on {
		return ""
	}
	return w.url + "/task/" + url.PathEscape(taskID)
}

func (w *webState) pair(ctx context.Context, in api.WebPairInput) (api.WebPairing, error) {
	if !w.on {
		return api.WebPairing{}, core.Errorf(core.CodeUnavailable,
			"the web inbox is off: set web_listen (kandev config set web_listen 127.0.0.1:8421) and restart the daemon, or start it with kandev serve --web 127.0.0.1:8421")
	}
	code, expires, err := w.devices.NewCode(ctx, in.Name)
	if err != nil {
		return api.WebPairing{}, err
	}
	return api.WebPairing{Code: webinbox.FormatCode(code), URL: w.url + "/pair?code=" + code, Name: webinbox.CleanName(in.Name),
		ExpiresAt: expires, Warning: w.warning}, nil
}

func (w *webState) list(ctx context.Context) ([]api.WebDevice, error) { return w.devices.List(ctx) }

func (w *webState) revoke(ctx context.Context, id string) (api.WebDevice, error) {
	return w.devices.Revoke(ctx, id)
}

// startWeb opens the inbox's address when one is set. Its stop closes it.
func startWeb(ctx context.Context, o ServeOptions, db *store.DB, log *slog.Logger) (*webState, func(), error) {
	st := &webState{devices: webinbox.NewDevices(db)}
	ws, err := loadWebSettings(o.Web)
	if err != nil {
		return nil, nil, err
	}
	if ws.listen == "" {
		return st, func() {}, nil
	}
	tlsOn, warning, err := ws.check()
	if err != nil {
		return nil, nil, err
	}
	var cert tls.Certificate
	if tlsOn {
		if cert, err = tls.LoadX509KeyPair(ws.cert, ws.key); err != nil {
			return nil, nil, fmt.Errorf("web inbox TLS: %w", err)
		}
	}
	client := daemonclient.Dial(o.Home.Socket())
	inbox, err := webinbox.New(webinbox.Options{Devices: st.devices, Client: client, Logger: log,
		Secure: tlsOn || strings.HasPrefix(ws.url, "https://")})
	if err != nil {
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", ws.listen)
	if err != nil {
		return nil, nil, fmt.Errorf("web inbox: listen on %s: %w", ws.listen, err)
	}
	st.on, st.url, st.warning = true, ws.baseURL(tlsOn, ln.Addr().String()), warning
	srv := &http.Server{Handler: inbox, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	if tlsOn {
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		ln = tls.NewListener(ln, srv.TLSConfig)
	}
	if warning != "" {
		for range 3 {
			log.Warn("WARNING: " + warning)
		}
	}
	log.Info("kandev web inbox listening", "addr", ln.Addr().String(), "url", st.url, "tls", tlsOn)
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("web inbox server", "err", err)
		}
	}()
	return st, func() {
		_ = srv.Close()
		client.Close()
	}, nil
}
