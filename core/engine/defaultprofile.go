package engine

import (
	"context"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/config"
)

// defaultProfile is the profile of a top-level task created without one,
// whoever creates it (the CLI, the TUI, an agent CLI on the external MCP
// surface): the configured one, else the first built-in agent whose
// command is on the daemon's PATH, else core.DefaultProfile (ADR 0023,
// ADR 0038). The configuration is read at each create, so a
// `kandev config set profile` applies without a daemon restart.
func (ro *Roles) defaultProfile(ctx context.Context) (string, error) {
	if ro.k.opts.Config == nil {
		return core.DefaultProfile, nil
	}
	cfg, err := ro.k.opts.Config()
	if err == nil {
		var v config.Value
		if v, err = cfg.Get("profile"); err == nil && v.Value != "" {
			return v.Value, nil
		}
	}
	if err != nil {
		return "", core.Errorf(core.CodeValidation, "no profile named, and the default profile cannot be read: %v", err)
	}
	profiles, err := ro.ListProfiles(ctx)
	if err != nil {
		return "", err
	}
	return core.PickDefaultProfile(profiles, ro.k.opts.SelfExe), nil
}
