#!/usr/bin/env bash
# The README's quickstart, verbatim (test/docs/quickstart.test.ts runs this file against a started server,
# so the README cannot rot). With `npm start` running in another terminal: `bash docs/quickstart.sh`.
# Needs only curl and node. API and LINK may be overridden from the environment.
set -euo pipefail
API=${API:-http://localhost:3000}
LINK=${LINK:-https://www.rfc-editor.org/rfc/rfc9110.txt}
field() { node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{let v=JSON.parse(s);for(const k of process.argv[1].split("."))v=v?.[k];process.stdout.write(String(v??""))})' "$1"; }
until_not() { # until_not URL FIELD VALUE...: polls URL until FIELD is none of the VALUEs; prints the body
  local url=$1 path=$2; shift 2
  for _ in $(seq 1 120); do
    body=$(curl -sf -H "Authorization: Bearer $TOKEN" "$url")
    state=$(printf '%s' "$body" | field "$path")
    case " $* " in *" $state "*) sleep 0.5 ;; *) printf '%s' "$body"; return 0 ;; esac
  done
  echo "timed out waiting on $url" >&2; return 1
}

# 1. A token for the running server (a dev JWT signed with its secret), and who it is.
TOKEN=$(npm run -s token -- --sub alice --email alice@example.com --name Alice)
curl -sf -H "Authorization: Bearer $TOKEN" "$API/me"; echo

# 2. An organization: alice becomes its owner; sandbox billing grants it starter credits.
ORG=$(curl -sf -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
  -d '{"name":"Acme"}' "$API/organizations" | field organization.id)
echo "organization: $ORG"

# 3. Import a link: answered at once (in_progress); a worker downloads it.
ASSET=$(curl -sf -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
  -d "{\"organization_id\":\"$ORG\",\"url\":\"$LINK\"}" "$API/assets/imports/link" | field id)
until_not "$API/assets/$ASSET" upload_file_state in_progress | field upload_file_state; echo " (asset $ASSET)"

# 4. A chat answer: a conversation, a message, a run; the answer streams into the conversation.
CONVERSATION=$(curl -sf -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
  -d "{\"organization_id\":\"$ORG\",\"title\":\"First chat\"}" "$API/conversations" | field id)
curl -sf -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
  -d '{"content":"Give me three names for a fox."}' "$API/conversations/$CONVERSATION/messages" > /dev/null
curl -sf -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
  -d '{}' "$API/conversations/$CONVERSATION/run" > /dev/null
until_not "$API/conversations/$CONVERSATION/run" run.status queued running | field run.status; echo " (chat run)"
curl -sf -H "Authorization: Bearer $TOKEN" "$API/conversations/$CONVERSATION/messages" | field items.1.content; echo

# 5. A generation: an image from a prompt, billed from the organization's credits.
GENERATION=$(curl -sf -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
  -d "{\"organization_id\":\"$ORG\",\"kind\":\"image\",\"prompt\":\"A fox in the snow\"}" "$API/generations" | field generation.id)
until_not "$API/generations/$GENERATION" generation.status queued running | field generation.status; echo " (generation $GENERATION)"
curl -sf -H "Authorization: Bearer $TOKEN" "$API/organizations/$ORG/credits" | field balance; echo " credits left"
