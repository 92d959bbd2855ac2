package core

import (
	"os/exec"
)

// AgentInfo is what a person needs to make a built-in profile run: how to
// install its agent and which credentials variables it reads. docs/agents.md
// says the same (a test holds them together); doctor and task create quote
// it.
type AgentInfo struct {
	Profile string
	// Install is the command that provides the profile's agent CLI.
	Install string
	// Credentials are the environment variables the agent reads its keys
	// and endpoints from (names only). Most agents also accept a login of
	// their own instead.
	Credentials []string
	// Usage says what it reports of its spend (ADR 0051; docs/usage.md):
	// "tokens and cost", "context and cost", or "" for nothing known.
	Usage string
}

// AgentInfos lists the built-in agents in the order the default profile is
// picked from them.
func AgentInfos() []AgentInfo {
	return []AgentInfo{
		{Profile: "claude", Install: "npm install -g @agentclientprotocol/claude-agent-acp@0.49.0",
			Credentials: []string{"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"}, Usage: UsageTokensCost},
		{Profile: "codex", Install: "npm install -g @zed-industries/codex-acp@0.16.0",
			Credentials: []string{"OPENAI_API_KEY"}},
		{Profile: "gemini", Install: "npm install -g @google/gemini-cli@0.61.0",
			Credentials: []string{"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT"}, Usage: UsageContextCost},
		{Profile: "qwen", Install: "npm install -g @qwen-code/qwen-code@0.15.10",
			// Qwen Code reads Alibaba Cloud Model Studio keys (DashScope's
			// pay-as-you-go, the Coding Plan's) as well as an
			// OpenAI-compatible endpoint.
			Credentials: []string{"DASHSCOPE_API_KEY", "BAILIAN_CODING_PLAN_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL"},
			Usage:       UsageContextCost},
		{Profile: "opencode", Install: "npm install -g opencode-ai@1.18.33",
			Credentials: []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY"}, Usage: UsageContextCost},
	}
}

// What a built-in agent reports of its spend.
const (
	// UsageTokensCost: each turn's tokens in the prompt response, and the
	// context and the session's cumulative cost in usage_update.
	UsageTokensCost = "tokens and cost"
	// UsageContextCost: usage_update only: the context window's use, and
	// the cost when the agent knows it; no token counts.
	UsageContextCost = "context and cost"
)

// AgentInfoFor returns the built-in agent of that profile name.
func AgentInfoFor(profile string) (AgentInfo, bool) {
	for _, a := range AgentInfos() {
		if a.Profile == profile {
			return a, true
		}
	}
	return AgentInfo{}, false
}

// LookCommand finds a profile's command as the daemon would run it: the
// kandev binary itself for SelfCommand, else on PATH (or as a path).
func LookCommand(p Profile, selfExe string) (string, error) {
	if p.Command == SelfCommand {
		return selfExe, nil
	}
	return exec.LookPath(p.Command)
}

// PickDefaultProfile is the profile a top-level task gets when neither a
// flag, the environment nor config.toml names one: the first built-in
// agent whose command is on PATH (by the profiles as they stand, so an
// override counts), else DefaultProfile.
func PickDefaultProfile(profiles []Profile, selfExe string) string {
	byName := map[string]Profile{}
	for _, p := range profiles {
		byName[p.Name] = p
	}
	for _, a := range AgentInfos() {
		p, ok := byName[a.Profile]
		if !ok {
			p, ok = BuiltinProfile(a.Profile)
		}
		if !ok {
			continue
		}
		if _, err := LookCommand(p, selfExe); err == nil {
			return p.Name
		}
	}
	return DefaultProfile
}

// CannotStartHint says how to make a profile whose command is missing run.
func CannotStartHint(p Profile) string {
	fix := "point the profile at an installed command (kandev profile add " + p.Name + " --command CMD)"
	if a, ok := AgentInfoFor(p.Name); ok {
		fix = "install it (" + a.Install + "), or " + fix
	}
	return fix + "; kandev doctor shows what can run"
}
