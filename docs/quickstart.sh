#!/usr/bin/env bash
# The README's quickstart, verbatim (test/docs/quickstart.test.ts runs this file against a started server,
# so the README cannot rot). With `npm start` running in another terminal: `bash docs/quickstart.sh`.
# Needs only curl and node. API and LINK may be overridden from the environment. A step that fails
# stops the script (exit 1) with its reason, e.g. why the link import ended in error.
set -euo pipefail
API=${API:-http://localhost:3000}
LINK=${LINK:-https://www.rfc-editor.org/rfc/rfc9110.txt}
field() { node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{let v=JSON.parse(s);for(const k of process.argv[1].split("."))v=v?.[k];process.stdout.write(typeof v==="object"&&v?JSON.stringify(v):String(v??""))})' "$1"; }
fail() { echo "quickstart: $*" >&2; exit 1; }
api() { # api METHOD PATH [JSON]: prints the answer's body; a refusal stops the script with the API's message
  local args=(-sS -X "$1" -H "Authorization: Bearer $TOKEN" -w '\n%{http_code}') out status
  if [ $# -ge 3 ]; then args+=(-H 'Content-Type: application/json' -d "$3"); fi
  out=$(curl "${args[@]}" "$API$2") || fail "$1 $2: no answer from $API (is \`npm start\` running?)"
  status=${out##*$'\n'} out=${out%$'\n'*}
  [ "$status" -lt 400 ] || fail "$1 $2 answered $status: $(printf '%s' "$out" | field message)"
  printf '%s' "$out"
}
wait_for() { # wait_for WHAT PATH FIELD GOOD ERROR_FIELD PENDING...: polls PATH while FIELD is a PENDING value,
  # prints "STATE (WHAT)", and stops with ERROR_FIELD's reason unless STATE is GOOD
  local what=$1 path=$2 field_path=$3 good=$4 error_field=$5 body state; shift 5
  for _ in $(seq 1 120); do
    body=$(api GET "$path")
    state=$(printf '%s' "$body" | field "$field_path")
    case " $* " in *" $state "*) sleep 0.5 ;; *)
      echo "$state ($what)"
      [ "$state" = "$good" ] || fail "$what ended $state: $(printf '%s' "$body" | field "$error_field.code"): $(printf '%s' "$body" | field "$error_field.message")"
      return 0 ;;
    esac
  done
  fail "timed out waiting on $path ($field_path still $state)"
}

# 1. A token for the running server (a dev JWT signed with its secret), and who it is.
TOKEN=$(npm run -s token -- --sub alice --email alice@example.com --name Alice)
api GET /me; echo

# 2. An organization: alice becomes its owner; sandbox billing grants it starter credits.
ORG=$(api POST /organizations '{"name":"Acme"}' | field organization.id)
echo "organization: $ORG"

# 3. Import a link: answered at once (in_progress); a worker downloads it. Offline? Serve a page on
#    loopback and start the server with OUTBOUND_ALLOWLIST=127.0.0.1:PORT, then LINK=http://127.0.0.1:PORT/...
ASSET=$(api POST /assets/imports/link "{\"organization_id\":\"$ORG\",\"url\":\"$LINK\"}" | field id)
wait_for "asset $ASSET" "/assets/$ASSET" upload_file_state success import_error in_progress

# 4. A chat answer: a conversation, a message, a run; the answer streams into the conversation.
CONVERSATION=$(api POST /conversations "{\"organization_id\":\"$ORG\",\"title\":\"First chat\"}" | field id)
api POST "/conversations/$CONVERSATION/messages" '{"content":"Give me three names for a fox."}' > /dev/null
api POST "/conversations/$CONVERSATION/run" '{}' > /dev/null
wait_for "chat run" "/conversations/$CONVERSATION/run" run.status succeeded run.error queued running
api GET "/conversations/$CONVERSATION/messages" | field items.1.content; echo

# 5. A generation: an image from a prompt, billed from the organization's credits.
GENERATION=$(api POST /generations "{\"organization_id\":\"$ORG\",\"kind\":\"image\",\"prompt\":\"A fox in the snow\"}" | field generation.id)
wait_for "generation $GENERATION" "/generations/$GENERATION" generation.status succeeded generation.error queued running
api GET "/organizations/$ORG/credits" | field balance; echo " credits left"
