import { createSecretKey } from 'node:crypto';
import type { Context, Middleware, Next } from 'koa';
import jwt from 'jsonwebtoken';
import koaJwt from 'koa-jwt';
import jwksRsa from 'jwks-rsa';
import type { Config } from '../config/schema.ts';
import type { Db } from '../db/knex.ts';
import { AppError, isAppError } from '../core/errors.ts';
import { USER_ID_MAX, userId } from '../core/zod.ts';
import type { Caller } from '../core/caller.ts';
import { isOperator } from './operator.ts';
import { secretKeyId } from './sign.ts';
import { UserDirectory } from '../users/directory.ts';

export const HMAC_ALGORITHMS = ['HS256'];
export const JWKS_ALGORITHMS = ['RS256', 'ES256'];

interface Claims {
  sub?: unknown;
  exp?: unknown;
  email?: unknown;
  name?: unknown;
}

/**
 * Bearer-token authentication (CONVENTIONS §2): koa-jwt verifies the signature with pinned
 * algorithms (so `alg: none` and algorithm swaps fail), issuer and audience; we then require
 * `exp` and a string `sub`, and create or refresh the user row just in time.
 */
export function authenticate(config: Config, secret: string | undefined, db: Db): Middleware {
  const verifier = config.JWKS_URI
    ? koaJwt({
        secret: jwksRsa.koaJwtSecret({ jwksUri: config.JWKS_URI, cache: true, cacheMaxAge: 10 * 60_000, rateLimit: true, jwksRequestsPerMinute: 10 }),
        algorithms: JWKS_ALGORITHMS,
        ...(config.JWT_ISSUER && { issuer: config.JWT_ISSUER }),
        ...(config.JWT_AUDIENCE && { audience: config.JWT_AUDIENCE }),
        key: 'claims',
      })
    : koaJwt({
        // A KeyObject, not the string: given a string, jsonwebtoken first tries (and fails) to parse
        // it as a PEM public key on every request, about a tenth of the CPU of an authenticated request.
        // (koa-jwt's types omit KeyObject; it passes the secret to jsonwebtoken as is.)
        secret: createSecretKey(Buffer.from(secret!)) as unknown as string,
        algorithms: HMAC_ALGORITHMS,
        ...(config.JWT_ISSUER && { issuer: config.JWT_ISSUER }),
        ...(config.JWT_AUDIENCE && { audience: config.JWT_AUDIENCE }),
        key: 'claims',
      });
  const users = new UserDirectory(db);
  const verifiedTokens = new VerifiedTokens();
  const keyId = secret === undefined ? undefined : secretKeyId(secret);

  return async function authenticateRequest(ctx: Context, next: Next) {
    let verified = false;
    const token = bearerToken(ctx);
    let known: Claims | undefined;
    const admit = async () => {
      const claims = ctx.state.claims as Claims;
      if (typeof claims.exp !== 'number') throw unauthorized('token has no exp claim');
      if (!userId.safeParse(claims.sub).success) throw unauthorized(`token sub must be a string of 1–${USER_ID_MAX} characters`);
      // Claims are input like any other: a NUL (which Postgres refuses) makes the token unacceptable.
      for (const claim of ['sub', 'email', 'name'] as const) {
        const value = claims[claim];
        if (typeof value === 'string' && value.includes('\0')) throw unauthorized(`token ${claim} must not contain the NUL character (U+0000)`);
      }
      verified = true;
      if (token && !known) verifiedTokens.remember(token, claims, claims.exp);
      const caller: Caller = {
        userId: claims.sub as string,
        email: typeof claims.email === 'string' ? claims.email.toLowerCase() : null,
        name: typeof claims.name === 'string' ? claims.name : null,
        operator: isOperator(config, claims as unknown as Record<string, unknown>),
        expiresAt: new Date(claims.exp * 1000),
      };
      await users.seen(caller);
      ctx.state.caller = caller;
      await next();
    };
    try {
      known = token ? verifiedTokens.recall(token) : undefined;
      if (known) {
        ctx.state.claims = known;
        await admit();
      } else {
        await verifier(ctx, admit);
      }
    } catch (error) {
      // Only koa-jwt's own rejections become 401s; failures further down keep their meaning.
      if (verified || isAppError(error)) throw error;
      const why = describeRejection(error as KoaJwtError);
      if (why === 'no bearer token') throw unauthorized(why, null);
      if (why.startsWith('malformed')) throw unauthorized(why, 'invalid_request');
      throw unauthorized(otherSecret(token, keyId) ?? why);
    }
  };
}

const bearerToken = (ctx: Context): string | undefined => /^Bearer ([^\s]+)$/.exec(ctx.get('authorization'))?.[1];

/**
 * Tokens this process verified in the last minute, by their exact text, so a caller's next
 * requests skip the signature check and its JSON parsing (about a sixth of an authenticated
 * request's CPU). Only a token that verified is ever remembered, never past its `exp`, and never
 * longer than a minute (a rotated JWKS key stops being honoured within that minute).
 */
class VerifiedTokens {
  private readonly entries = new Map<string, { claims: Claims; until: number }>();
  private static readonly MAX = 10_000;
  private static readonly TTL_MS = 60_000;

  recall(token: string): Claims | undefined {
    const entry = this.entries.get(token);
    if (!entry) return undefined;
    if (Date.now() < entry.until) return entry.claims;
    this.entries.delete(token);
    return undefined;
  }

  remember(token: string, claims: Claims, exp: number): void {
    if (this.entries.size >= VerifiedTokens.MAX) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(token, { claims, until: Math.min(Date.now() + VerifiedTokens.TTL_MS, exp * 1000) });
  }
}

interface KoaJwtError {
  status?: number;
  message?: string;
  originalError?: { name?: string; message?: string };
}

/** koa-jwt says "Authentication Error" for everything; its originalError says why. */
function describeRejection(error: KoaJwtError): string {
  if (error.status !== 401) throw error;
  if (/Bad Authorization header/.test(error.message ?? '')) return 'malformed Authorization header; send "Authorization: Bearer <token>"';
  const cause = error.originalError;
  if (!cause) return 'no bearer token';
  if (cause.name === 'TokenExpiredError') return 'token expired';
  if (cause.name === 'NotBeforeError') return 'token not yet valid';
  if (/audience/.test(cause.message ?? '')) return 'token audience is not accepted';
  if (/issuer/.test(cause.message ?? '')) return 'token issuer is not accepted';
  return 'token failed verification';
}

/**
 * A token whose `kid` (./sign.ts) names another HS256 secret: minted by `npm run token` for another
 * data directory (its generated secret) or another JWT_SECRET. Says so, and what to do.
 */
function otherSecret(token: string | undefined, keyId: string | undefined): string | undefined {
  if (!token || !keyId) return undefined;
  const kid = (jwt.decode(token, { complete: true }) as { header?: { kid?: unknown } } | null)?.header?.kid;
  if (typeof kid !== 'string' || kid === keyId) return undefined;
  return (
    `token was signed with another secret (key id ${kid.slice(0, 32)}; this server's is ${keyId}): it was minted for another data directory ` +
    'or JWT_SECRET; mint one for this server with `npm run token -- --sub <user>` in the same directory and environment (DATA_DIR, JWT_SECRET)'
  );
}

/** Characters RFC 6750 allows in a quoted `error_description`. */
const quotable = (text: string) => text.replace(/[^\x20\x21\x23-\x5b\x5d-\x7e]/g, '-');

/**
 * 401 with `WWW-Authenticate: Bearer` (RFC 6750 §3): without a token no error code (the client
 * has to authenticate); a malformed header is `invalid_request`; a token that failed is `invalid_token`.
 */
const unauthorized = (why: string, error: 'invalid_token' | 'invalid_request' | null = 'invalid_token') =>
  new AppError('unauthorized', `a valid bearer token is required: ${why}`, [], {
    headers: { 'WWW-Authenticate': error ? `Bearer realm="api", error="${error}", error_description="${quotable(why)}"` : 'Bearer realm="api"' },
  });
