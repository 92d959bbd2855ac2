package daemon

import (
	"strings"
	"testing"
)

// ADR 0080: loopback serves plain HTTP; beyond it, TLS or an explicit
// acceptance of plain HTTP with a warning; anything else refuses to start.
func TestWebListenBeyondLoopbackNeedsTLSOrConsent(t *testing.T) {
	for _, c := range []struct {
		ws      webSettings
		tls     bool
		warning bool
		err     string
	}{
		{ws: webSettings{listen: "127.0.0.1:8421"}},
		{ws: webSettings{listen: "127.3.4.5:8421"}},
		{ws: webSettings{listen: "[::1]:8421"}},
		{ws: webSettings{listen: "localhost:8421"}},
		{ws: webSettings{listen: "0.0.0.0:8421"}, err: "reaches beyond this machine"},
		{ws: webSettings{listen: ":8421"}, err: "reaches beyond this machine"},
		{ws: webSettings{listen: "192.168.1.5:8421"}, err: "web_tls_cert"},
		{ws: webSettings{listen: "192.168.1.5:8421", cert: "c.pem", key: "k.pem"}, tls: true},
		{ws: webSettings{listen: "192.168.1.5:8421", plain: true}, warning: true},
		{ws: webSettings{listen: "127.0.0.1:8421", cert: "c.pem"}, err: "go together"},
		{ws: webSettings{listen: "8421"}, err: "not host:port"},
		{ws: webSettings{listen: "127.0.0.1:http"}, err: "not a port"},
	} {
		tlsOn, warning, err := c.ws.check()
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%+v: err %v, want %q", c.ws, err, c.err)
			}
		case err != nil:
			t.Errorf("%+v: %v", c.ws, err)
		case tlsOn != c.tls || (warning != "") != c.warning:
			t.Errorf("%+v: tls %v warning %q", c.ws, tlsOn, warning)
		}
	}
}

func TestWebLinks(t *testing.T) {
	w := &webState{on: true, url: webSettings{listen: "127.0.0.1:0"}.baseURL(false, "127.0.0.1:8421")}
	if got := w.link("k3f9qa"); got != "http://127.0.0.1:8421/task/k3f9qa" {
		t.Errorf("link %q", got)
	}
	if got := (webSettings{listen: "127.0.0.1:8421", url: "https://box.tail.ts.net/"}).baseURL(false, "127.0.0.1:8421"); got != "https://box.tail.ts.net" {
		t.Errorf("web_url %q", got)
	}
	if got := (&webState{}).link("k3f9qa"); got != "" {
		t.Errorf("link of an inbox that is off: %q", got)
	}
}
