// Package ulfm holds the fault-tolerant protocols of ULFM as pure state machines, with no
// I/O, goroutines or clocks: Agreement, the uniform agreement behind Agree and Shrink, and
// Revoke, the flood that revokes a group. Package runtime drives them: it delivers
// messages and failure verdicts, and sends the messages the machines return.
//
// # The model
//
// A group has n members, 0 to n-1. A verdict (Failed) says that a member is dead, and is
// never wrong; every live member gets a verdict for every member that dies. Messages
// between live members arrive reliably, in order per sender and receiver; a dead member's
// last messages may arrive or not. A member may die between any two messages it sends.
//
// # Agreement
//
// Every member calls its group's agreements in the same order, numbered by Seq. For
// each, it makes an Agreement with its contribution (words that every member combines by
// bitwise AND, all of one length) and the members it knows failed, calls Start, then
// feeds Recv and Failed until Decided. All members that decide, even those that die
// afterwards, decide the same Decision; every live member decides. design.md has the
// protocol and the proof.
//
// The caller must:
//   - keep the messages of a Seq it has not started, and deliver them in arrival order
//     after that Seq's Start;
//   - keep a decided Agreement receiving messages and verdicts until the member decides
//     the next Seq of the group: a late coordinator still needs its answer;
//   - take verdicts from a perfect source (a process gone, a host lost), never from a
//     timeout on a slow member.
//
// # Revoke
//
// A Revoke per group and member: Local revokes, Recv handles a peer's Revoke message.
// Once any live member is revoked, every live member becomes revoked when the messages
// in flight arrive, even if the members that sent them died.
//
// # Wire form
//
// Msg.Append and Decode are the messages' wire form, little endian, its layout fixed by
// the Kind. Decode checks every length and range before it allocates.
//
// Concurrency: an Agreement or Revoke has one owner, who serializes its calls. The
// messages and decisions they return are never modified afterwards.
package ulfm
