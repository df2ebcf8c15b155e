#!/bin/sh
# An approval hook for `toolmend loop` that asks the person at the terminal.
# stdin: {"tool", "parameters", "iteration", "reason"?}; allow only on "y".
# It reads the answer from /dev/tty, since stdin carries the request.
request=$(cat)
printf '\ntoolmend wants to run: %s\nallow? [y/N] ' "$request" > /dev/tty
read -r answer < /dev/tty || exit 1
case "$answer" in
  y|Y|yes) echo '{"decision":"allow"}' ;;
  *) echo '{"decision":"deny","reason":"the user said no"}' ;;
esac
