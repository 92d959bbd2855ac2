package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"

	authv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Target names a cluster the way every Kubernetes tool does: a kubeconfig
// (its path; "" = KUBECONFIG, else ~/.kube/config), a context in it ("" =
// its current context) and a namespace ("" = the context's, else
// "default").
type Target struct {
	Kubeconfig string `json:"kubeconfig,omitempty"`
	Context    string `json:"context,omitempty"`
	Namespace  string `json:"namespace,omitempty"`
}

// Client is a connection to one namespace of a cluster.
type Client struct {
	cs        kubernetes.Interface
	cfg       *rest.Config
	namespace string
	context   string
}

// quietOnce sends client-go's own logging (klog: "Copying stdout failed"
// when kandev ends a stream on purpose, and the like) nowhere: kandev
// reports what fails through its errors, and the daemon's stderr is not
// klog's to write on.
var quietOnce sync.Once

// Connect reads t's kubeconfig and makes a client for its namespace. It
// does not reach the cluster; Check does.
func Connect(t Target) (*Client, error) {
	quietOnce.Do(func() { klog.SetLogger(logr.Discard()) })
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if t.Kubeconfig != "" {
		rules.ExplicitPath = t.Kubeconfig
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: t.Context}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	raw, err := cc.RawConfig()
	if err != nil {
		return nil, fmt.Errorf("kube: kubeconfig: %w", err)
	}
	ctxName := t.Context
	if ctxName == "" {
		ctxName = raw.CurrentContext
	}
	if ctxName == "" {
		return nil, errors.New("kube: the kubeconfig has no current context; name one with --context")
	}
	if _, ok := raw.Contexts[ctxName]; !ok {
		return nil, fmt.Errorf("kube: the kubeconfig has no context %q", ctxName)
	}
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kube: context %q: %w", ctxName, err)
	}
	ns := t.Namespace
	if ns == "" {
		if ns, _, err = cc.Namespace(); err != nil || ns == "" {
			ns = "default"
		}
	}
	cfg.UserAgent = "kandev"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kube: %w", err)
	}
	return &Client{cs: cs, cfg: cfg, namespace: ns, context: ctxName}, nil
}

// Namespace is the namespace the client's pods go in.
func (c *Client) Namespace() string { return c.namespace }

// Context is the kubeconfig context the client uses.
func (c *Client) Context() string { return c.context }

// Report is what Check found.
type Report struct {
	Context   string `json:"context"`
	Namespace string `json:"namespace"`
	// Server is the API server's version (its git version).
	Server string `json:"server"`
	// Missing lists what kandev needs and may not do in the namespace
	// ("create pods", "create pods/attach", …); empty when all is allowed.
	Missing []string `json:"missing,omitempty"`
}

// OK says the cluster can run kandev's sessions.
func (r Report) OK() bool { return len(r.Missing) == 0 }

// needed is what kandev does in the namespace (the Role docs/kubernetes.md
// gives grants exactly this).
var needed = []authv1.ResourceAttributes{
	{Verb: "create", Resource: "pods"},
	{Verb: "get", Resource: "pods"},
	{Verb: "list", Resource: "pods"},
	{Verb: "watch", Resource: "pods"},
	{Verb: "delete", Resource: "pods"},
	{Verb: "create", Resource: "pods", Subresource: "attach"},
	{Verb: "create", Resource: "pods", Subresource: "exec"},
}

// Check reaches the API server, makes sure the namespace exists, and asks
// the server (SelfSubjectAccessReview) whether kandev may do what it
// needs there. An unreachable server or a missing namespace is an error;
// missing permissions are listed in the report.
func (c *Client) Check(ctx context.Context) (Report, error) {
	rep := Report{Context: c.context, Namespace: c.namespace}
	v, err := c.cs.Discovery().ServerVersion()
	if err != nil {
		return rep, fmt.Errorf("kube: the API server of context %q: %w", c.context, err)
	}
	rep.Server = v.GitVersion
	if _, err := c.cs.CoreV1().Namespaces().Get(ctx, c.namespace, metav1.GetOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return rep, fmt.Errorf("kube: namespace %q does not exist in context %q", c.namespace, c.context)
		}
		// Reading namespaces is not kandev's to need: a Role in the
		// namespace cannot grant it. Listing pods there tells the same.
		if !apierrors.IsForbidden(err) {
			return rep, fmt.Errorf("kube: namespace %q: %w", c.namespace, err)
		}
	}
	for _, a := range needed {
		a.Namespace = c.namespace
		r, err := c.cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
			&authv1.SelfSubjectAccessReview{Spec: authv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &a}},
			metav1.CreateOptions{})
		if err != nil {
			return rep, fmt.Errorf("kube: access review: %w", err)
		}
		if !r.Status.Allowed {
			what := a.Verb + " " + a.Resource
			if a.Subresource != "" {
				what += "/" + a.Subresource
			}
			rep.Missing = append(rep.Missing, what)
		}
	}
	return rep, nil
}

// Problem says in one line what rep lacks ("" when nothing).
func (r Report) Problem() string {
	if r.OK() {
		return ""
	}
	return "may not " + strings.Join(r.Missing, ", ") + " in namespace " + r.Namespace
}
