// Package safefile writes files into folders that other users may share, such as a
// job's observation files (--trace, --profile), without following a link that another
// user made.
//
// A file is written under a new name in its folder (O_EXCL, O_NOFOLLOW: no link can
// stand there) and renamed over its name once complete: a link at that name is
// replaced, never followed, and a reader never sees half a file. Check tells, before
// anything is written, why a path could be redirected or replaced by another user, so
// that a launcher can refuse it with a message before any rank starts.
//
// A File belongs to one goroutine. The functions are safe for concurrent use.
package safefile
