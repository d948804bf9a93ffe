// `npm run token -- --sub USER_ID [--email E] [--name N] [--ttl SECONDS] [--operator]`: prints a bearer
// token that the running configuration accepts (HS256 with JWT_SECRET or the generated dev secret).
// `--operator` adds the operator claim (OPERATOR_CLAIM = OPERATOR_CLAIM_VALUE): the job console's token.
import { parseArgs } from 'node:util';
import { loadConfigOrExit } from '../config/load.ts';
import { resolveJwtSecret } from './secret.ts';
import { signToken } from './sign.ts';

const USAGE = `usage: npm run token -- --sub USER_ID [--email E] [--name N] [--ttl SECONDS] [--operator]
  Prints a bearer token the running configuration accepts (HS256 with JWT_SECRET, or the dev secret under DATA_DIR).
  --sub USER_ID   the user id (the token's sub claim); required
  --email E       the email claim
  --name N        the name claim
  --ttl SECONDS   lifetime (default 86400)
  --operator      adds the operator claim (OPERATOR_CLAIM=OPERATOR_CLAIM_VALUE): the job console's token
  -h, --help      this text
`;

const options = {
  sub: { type: 'string' },
  email: { type: 'string' },
  name: { type: 'string' },
  ttl: { type: 'string', default: '86400' },
  operator: { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
} as const;
let parsed: ReturnType<typeof parseArgs<{ options: typeof options }>>;
try {
  parsed = parseArgs({ options });
} catch (error) {
  // An unknown option or a missing value: its one line and the usage, not a stack.
  process.stderr.write(`${(error as Error).message}\n${USAGE}`);
  process.exit(2);
}
const { values } = parsed;
if (values.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}
if (!values.sub) {
  process.stderr.write(USAGE);
  process.exit(2);
}
const config = loadConfigOrExit();
const secret = await resolveJwtSecret(config);
if (!secret) {
  process.stderr.write('tokens are verified through JWKS_URI here; get one from your identity provider\n');
  process.exit(2);
}
process.stdout.write(
  `${signToken(secret, { sub: values.sub, email: values.email, name: values.name, issuer: config.JWT_ISSUER, audience: config.JWT_AUDIENCE, ttlSeconds: Number(values.ttl), ...(values.operator && { extra: { [config.OPERATOR_CLAIM]: [config.OPERATOR_CLAIM_VALUE] } }) })}\n`,
);
