// Package sysuser gives tests a second user of the machine: a system account, made with
// useradd on first use, that owns files or runs processes where a test needs another
// uid than root's. Tests that call it skip unless they run as root.
package sysuser
