// Package capability decides which kandev MCP tools a session sees. One
// declarative table lists every tool with the base surfaces and additive
// group that carry it; Resolve composes a surface with the groups a task's
// persisted fields switch on. Nothing else in kandev decides a tool list.
package capability

import (
	"fmt"
	"sort"
)

// Surface is a base tool surface.
type Surface string

const (
	// KanbanTask: an agent working a task in the task tree.
	KanbanTask Surface = "kanban-task"
	// OfficeTask: an agent working a task as a named role with a manager.
	OfficeTask Surface = "office-task"
	// Configuration: an agent that edits kandev's own configuration.
	Configuration Surface = "configuration"
	// External: an agent CLI a person runs by hand, with no session token.
	External Surface = "external"
)

// Surfaces lists every base surface.
var Surfaces = []Surface{KanbanTask, OfficeTask, Configuration, External}

// ParseSurface checks a surface name.
func ParseSurface(s string) (Surface, error) {
	for _, v := range Surfaces {
		if string(v) == s {
			return v, nil
		}
	}
	return "", fmt.Errorf("unknown surface %q (want kanban-task, office-task, configuration or external)", s)
}

// TaskSurface reports whether sessions of this surface work a task.
func (s Surface) TaskSurface() bool { return s != External }

// Group is an additive set of tools switched on by a task's fields.
type Group string

const (
	// GroupTitle: the task's title is a placeholder its agent should set.
	GroupTitle Group = "title"
	// GroupQuestion: the one question tool the autopilot rule allows.
	GroupQuestion Group = "question"
	// GroupProvider: tools for the git host of the task's repository
	// (its origin): GitHub's pull requests, GitLab's merge requests.
	GroupProvider Group = "provider"
)

// Question tool names. Rule 1: no session ever gets both.
const (
	AskUser   = "ask_user_question_kandev"
	AskParent = "ask_parent_question_kandev"
)

// Case is everything Resolve needs, all of it read from persisted task and
// profile fields, so a restart resolves the same set.
type Case struct {
	Surface      Surface
	Autopilot    bool
	HasParent    bool
	TitlePending bool
	// Host: the git host of the task's repository (HostGitHub, HostGitLab),
	// "" for none kandev has tools for.
	Host string
}

// Set is a resolved capability set.
type Set struct {
	Surface Surface `json:"surface"`
	Groups  []Group `json:"groups"`
	// Question is the question tool granted, or "" for none.
	Question string `json:"question_tool"`
	Tools    []Tool `json:"-"`
}

// Names lists the set's tool names, sorted.
func (s Set) Names() []string {
	names := make([]string, len(s.Tools))
	for i, t := range s.Tools {
		names[i] = t.Name
	}
	sort.Strings(names)
	return names
}

// Has reports whether the set grants a tool.
func (s Set) Has(name string) bool {
	for _, t := range s.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// QuestionTool applies rule 1: a normal task asks the operator; an autopilot
// task asks its direct parent; an autopilot root asks no one.
func QuestionTool(autopilot, hasParent bool) string {
	switch {
	case !autopilot:
		return AskUser
	case hasParent:
		return AskParent
	default:
		return ""
	}
}

// Resolve composes the base surface with the groups the case switches on.
func Resolve(c Case) Set {
	set := Set{Surface: c.Surface}
	groups := map[Group]bool{}
	if c.Surface.TaskSurface() {
		if c.TitlePending {
			groups[GroupTitle] = true
		}
		set.Question = QuestionTool(c.Autopilot, c.HasParent)
		if set.Question != "" {
			groups[GroupQuestion] = true
		}
		if c.Host != "" {
			groups[GroupProvider] = true
		}
	}
	for _, g := range []Group{GroupTitle, GroupQuestion, GroupProvider} {
		if groups[g] {
			set.Groups = append(set.Groups, g)
		}
	}
	for _, t := range registry {
		switch {
		case t.Group == "":
			if t.onSurface(c.Surface) {
				set.Tools = append(set.Tools, t)
			}
		case t.Group == GroupQuestion:
			if t.Name == set.Question {
				set.Tools = append(set.Tools, t)
			}
		case t.Group == GroupProvider:
			if groups[GroupProvider] && t.Host == c.Host {
				set.Tools = append(set.Tools, t)
			}
		case groups[t.Group]:
			set.Tools = append(set.Tools, t)
		}
	}
	return set
}

// Lookup finds a tool by name.
func Lookup(name string) (Tool, bool) {
	for _, t := range registry {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}

// All lists every tool in the registry, in table order.
func All() []Tool { return append([]Tool(nil), registry...) }

func (t Tool) onSurface(s Surface) bool {
	for _, ts := range t.Surfaces {
		if ts == s {
			return true
		}
	}
	return false
}
