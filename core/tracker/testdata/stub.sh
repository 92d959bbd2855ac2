#!/bin/sh
# A stand-in for gh or glab: records each argument on a line of
# $STUB_LOG, then replays a recorded answer: $STUB_ERR on stderr with
# exit $STUB_EXIT when set, else the file $STUB_DIR names for the call
# (notes.json for a glab notes call, out.json otherwise).
for a in "$@"; do printf '%s\n' "$a"; done >> "$STUB_LOG"
echo --- >> "$STUB_LOG"
if [ -n "$STUB_ERR" ]; then
	printf '%s\n' "$STUB_ERR" >&2
	[ -n "$STUB_ERR_OUT" ] && printf '%s\n' "$STUB_ERR_OUT"
	exit "${STUB_EXIT:-1}"
fi
case "$*" in
*/notes*) cat "$STUB_DIR/notes.json" ;;
*) cat "$STUB_DIR/out.json" ;;
esac
