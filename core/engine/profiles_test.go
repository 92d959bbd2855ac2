package engine_test

import (
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

func TestProfilesAddListShowRemove(t *testing.T) {
	env := newEngineEnv(t)
	ps, err := env.eng.Roles.ListProfiles(env.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != len(core.BuiltinProfiles()) {
		t.Fatalf("fresh home lists %d profiles, want the %d built-ins", len(ps), len(core.BuiltinProfiles()))
	}

	saved, err := env.eng.Roles.AddProfile(env.ctx, core.Profile{Name: "plain", Command: "my-agent", Args: []string{"--acp"},
		Env: []string{"K=V"}, MCP: false})
	if err != nil {
		t.Fatal(err)
	}
	if saved.Source != "user" || saved.MCP || saved.Command != "my-agent" || len(saved.Args) != 1 || len(saved.Env) != 1 {
		t.Fatalf("saved: %+v", saved)
	}
	// Adding again replaces it.
	if saved, err = env.eng.Roles.AddProfile(env.ctx, core.Profile{Name: "plain", Command: "other", MCP: true}); err != nil || saved.Command != "other" || !saved.MCP {
		t.Fatalf("replace: %+v %v", saved, err)
	}
	// Overriding a built-in, then removing the override, restores it.
	over, err := env.eng.Roles.AddProfile(env.ctx, core.Profile{Name: "codex", Command: "codex-wrapper", MCP: true})
	if err != nil || over.Source != "override" {
		t.Fatalf("override: %+v %v", over, err)
	}
	if got, _ := env.eng.Roles.GetProfile(env.ctx, "codex"); got.Command != "codex-wrapper" || got.Source != "override" {
		t.Fatalf("show override: %+v", got)
	}
	if _, err := env.eng.Roles.RemoveProfile(env.ctx, "codex", api.RemoveProfileInput{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := env.eng.Roles.GetProfile(env.ctx, "codex"); got.Command != "codex-acp" || got.Source != "builtin" {
		t.Fatalf("after removing the override: %+v", got)
	}
	env.restart()
	ps, _ = env.eng.Roles.ListProfiles(env.ctx)
	found := false
	for _, p := range ps {
		if p.Name == "plain" {
			found = p.Command == "other" && p.Source == "user"
		}
		if p.Args == nil || p.Env == nil {
			t.Errorf("%s: args/env must be lists, not null", p.Name)
		}
	}
	if !found {
		t.Fatalf("user profile lost across a restart: %+v", ps)
	}
	if _, err := env.eng.Roles.RemoveProfile(env.ctx, "plain", api.RemoveProfileInput{}); err != nil {
		t.Fatal(err)
	}

	_, err = env.eng.Roles.RemoveProfile(env.ctx, "claude", api.RemoveProfileInput{})
	i2WantErr(t, err, core.CodeValidation, "built in")
	_, err = env.eng.Roles.RemoveProfile(env.ctx, "plain", api.RemoveProfileInput{})
	i2WantErr(t, err, core.CodeNotFound, "plain")
	_, err = env.eng.Roles.GetProfile(env.ctx, "ghost")
	i2WantErr(t, err, core.CodeNotFound, "ghost")
	_, err = env.eng.Roles.AddProfile(env.ctx, core.Profile{Name: "Bad Name", Command: "x"})
	i2WantErr(t, err, core.CodeValidation, "profile name")
	_, err = env.eng.Roles.AddProfile(env.ctx, core.Profile{Name: "nocmd"})
	i2WantErr(t, err, core.CodeValidation, "--command")
	_, err = env.eng.Roles.AddProfile(env.ctx, core.Profile{Name: "sneaky", Command: core.SelfCommand})
	i2WantErr(t, err, core.CodeValidation, "reserved")
	ext := core.WithActor(env.ctx, core.Actor{Kind: core.ActorExternal})
	_, err = env.eng.Roles.AddProfile(ext, core.Profile{Name: "ext", Command: "x"})
	i2WantErr(t, err, core.CodeForbidden)
}
