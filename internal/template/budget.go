package template

import (
	"context"
	"fmt"
	"sync/atomic"
	texttemplate "text/template"
	"text/template/parse"
	"time"
)

// The render budget.
//
// text/template cannot be interrupted: Execute runs until the template
// ends or something it calls fails. What can loop is known, though: a
// range (over a list, a map, an integer, a channel or an iterator
// function, every iteration runs its body) and a template call ({{
// template }} and {{ block }}, which can recurse). insertSteps puts a step
// marker at the start of every range body and of every template, once,
// after parsing. A marker is a text node of no text, a unique one:
// text/template writes it to the output writer like any text, and the
// writer (limitedBuffer) recognises it by its backing array, counts a
// step and fails the write when the budget is spent, which ends the
// execution with that error. The cost of a step is one method call on the
// writer: no reflection, no function lookup.
//
// The time budget and the caller's context set a flag from their own
// goroutines (a timer, context.AfterFunc); steps and every write read it.
// Helpers that loop over their argument (uniq) read it too. A single
// helper call that never returns cannot be stopped this way: the agent
// watches for that (agent.Renderer.Wedged).

// stepMark is the text of every step marker: empty, with a backing array
// that no other text shares.
var stepMark = make([]byte, 0, 1)

// isStepMark reports whether p is the text of a step marker.
func isStepMark(p []byte) bool {
	return len(p) == 0 && cap(p) > 0 && &p[:1][0] == &stepMark[:1][0]
}

// insertSteps puts a step marker at the start of every template of t and of
// every range body in them.
func insertSteps(t *texttemplate.Template) {
	var walk func(n parse.Node)
	walkList := func(l *parse.ListNode) {
		if l != nil {
			for _, c := range l.Nodes {
				walk(c)
			}
		}
	}
	walk = func(n parse.Node) {
		switch n := n.(type) {
		case *parse.IfNode:
			walkList(n.List)
			walkList(n.ElseList)
		case *parse.WithNode:
			walkList(n.List)
			walkList(n.ElseList)
		case *parse.RangeNode:
			walkList(n.List)
			walkList(n.ElseList)
			n.List = prependStep(n.List, n.Pos)
		case *parse.ListNode:
			walkList(n)
		}
	}
	for _, tt := range t.Templates() {
		if tt.Tree == nil || tt.Root == nil {
			continue
		}
		walkList(tt.Root)
		tt.Root = prependStep(tt.Root, tt.Root.Pos)
	}
}

// prependStep returns l with a step marker first. A range's body is never
// nil once parsed (an empty body is an empty list), but a nil list gets a
// list of its own.
func prependStep(l *parse.ListNode, pos parse.Pos) *parse.ListNode {
	mark := &parse.TextNode{NodeType: parse.NodeText, Pos: pos, Text: stepMark}
	if l == nil {
		return &parse.ListNode{NodeType: parse.NodeList, Pos: pos, Nodes: []parse.Node{mark}}
	}
	l.Nodes = append([]parse.Node{mark}, l.Nodes...)
	return l
}

// Reasons an execution is stopped, in budget.halt.
const (
	running int32 = iota
	haltTimeout
	haltInterrupted
)

// budget is one execution's step count and stop flag.
type budget struct {
	steps, maxSteps int64
	timeout         time.Duration
	// halt is set from other goroutines (the timer, the context).
	halt  atomic.Int32
	cause error // the context's error, set before halt says haltInterrupted
}

// start arms the time budget and ctx's cancellation and returns what
// disarms them.
func (b *budget) start(ctx context.Context, l Limits) (stop func()) {
	b.maxSteps, b.timeout = l.MaxSteps, l.Timeout
	timer := time.AfterFunc(l.Timeout, func() { b.halt.CompareAndSwap(running, haltTimeout) })
	stopCtx := context.AfterFunc(ctx, func() {
		b.cause = ctx.Err()
		b.halt.CompareAndSwap(running, haltInterrupted)
	})
	return func() {
		timer.Stop()
		stopCtx()
	}
}

// check counts a step when p is a step marker and fails when the budget is
// spent or the execution is interrupted.
func (b *budget) check(p []byte) error {
	if isStepMark(p) {
		b.steps++
		if b.steps > b.maxSteps {
			return &budgetError{kind: ErrBudgetExceeded,
				msg: fmt.Sprintf("step budget exceeded: more than %d steps (range iterations and template calls; render_steps)", b.maxSteps)}
		}
	}
	return b.stopped()
}

// stopped returns the error that ends the execution once the time budget
// is spent or the context ended, nil before; nil for no budget (a helper
// called outside an execution).
func (b *budget) stopped() error {
	if b == nil {
		return nil
	}
	switch b.halt.Load() {
	case haltTimeout:
		return &budgetError{kind: ErrBudgetExceeded,
			msg: fmt.Sprintf("time budget exceeded: still running after %v (render_timeout)", b.timeout)}
	case haltInterrupted:
		return &budgetError{kind: ErrInterrupted, msg: fmt.Sprintf("%v: %v", ErrInterrupted, b.cause)}
	}
	return nil
}

// budgetError ends an execution that is over budget or interrupted. Its
// message holds numbers only.
type budgetError struct {
	kind error // ErrBudgetExceeded or ErrInterrupted
	msg  string
}

func (e *budgetError) Error() string { return e.msg }
func (e *budgetError) Unwrap() error { return e.kind }
