package daemon

import (
	"context"
	"log/slog"
	"os"
	"strconv"
	"sync"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/config"
	"github.com/kandev/kandev/core/notify"
)

// notifySettings reads the notifications and notify_command keys at each
// delivery, so `kandev config set` applies without a restart.
func notifySettings() (notify.Settings, error) {
	cfg, err := config.Load(os.Getenv)
	if err != nil {
		return notify.Settings{}, err
	}
	on, err := cfg.Get("notifications")
	if err != nil {
		return notify.Settings{}, err
	}
	cmd, err := cfg.Get("notify_command")
	if err != nil {
		return notify.Settings{}, err
	}
	desktop, _ := strconv.ParseBool(on.Value)
	return notify.Settings{Desktop: desktop, Command: cmd.Value}, nil
}

// eventSource is what the notifier reads: the engine's events.
type eventSource interface {
	Events(ctx context.Context, in api.EventsInput) (<-chan core.Event, error)
}

// startNotifier tells a person, through the configured channels, about
// every task the engine marks as starting to need one. The returned stop
// ends the delivery (a command running is killed) and waits for it.
// link is a task's page on the web inbox ("" when it is off), carried
// in each notification.
func startNotifier(ctx context.Context, c eventSource, log *slog.Logger, link func(taskID string) string) (stop func(), err error) {
	ctx, cancel := context.WithCancel(ctx)
	events, err := c.Events(ctx, api.EventsInput{})
	if err != nil {
		cancel()
		return nil, err
	}
	n := notify.New(notify.Options{Settings: notifySettings, Logger: log})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		n.Run(ctx)
	}()
	go func() {
		defer wg.Done()
		for ev := range events {
			if ev.Type == core.EventNeedsYou && ev.Task != nil {
				e := notify.FromTask(ev.Task, ev.At)
				if link != nil {
					e.URL = link(ev.Task.ID)
				}
				n.Notify(e)
			}
		}
	}()
	return func() { cancel(); wg.Wait() }, nil
}
