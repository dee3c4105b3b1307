// Package rollout is the feedback loop of a canary rollout, above publish
// (which writes) and fleet (which reads and judges the agents): status →
// judgement → action.
//
//  1. Start a rollout: Start refuses a canary whose selection selects no
//     expected agent (*EmptySelectionError; a typo in a selector must not
//     become a rollout nobody follows), then publishes the candidate with
//     publish.Publisher.Publish. `confpush publish --canary` and each
//     change of `confpush watch --canary` go through it.
//  2. Judge it: Classify places every agent (stable, candidate, applied,
//     failing, gone; selected or not, by the labels it reports) and
//     Evaluate turns that and the bake clock into a verdict (wait, pass,
//     fail).
//  3. Act: Drive follows the fleet through watches (fleet.Fleet.Changes),
//     aborts at the first failing canary agent, widens step by step
//     (ParseSteps, Step) and promotes after the bake; its actions are
//     publish's compare-and-swaps (Widen, Promote, Abort), and it holds
//     the driver's liveness node (publish.Publisher.HoldDriver) while it
//     runs.
//  4. Show it: Read (or NewView over what a caller already read) is the one
//     view `confpush rollout status` and the dashboard render: each
//     agent's place and why, the counts, each step's progress, and
//     whether the driver is alive, gone or none.
//
// zkclient's package documentation ("Errors") says what each class of
// error means; ErrEnded is a rollout someone else ended.
package rollout
