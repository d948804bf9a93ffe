import { createHash } from 'node:crypto';
import jwt from 'jsonwebtoken';

/**
 * A public name for an HS256 secret (a hash of it, which reveals nothing of it), carried as the
 * token's `kid`: a server holding another secret can then say why it refuses the token (it was
 * minted for another data directory or JWT_SECRET) instead of a bare "failed verification".
 */
export const secretKeyId = (secret: string) => createHash('sha256').update(`workspace-platform jwt kid\n${secret}`).digest('base64url').slice(0, 16);

export interface TokenClaims {
  sub: string;
  email?: string | undefined;
  name?: string | undefined;
  issuer?: string | undefined;
  audience?: string | undefined;
  ttlSeconds?: number;
  /** Other claims (e.g. the operator claim). */
  extra?: Record<string, unknown> | undefined;
}

/** HS256 tokens for development and tests (production tokens come from the identity provider). */
export function signToken(secret: string, claims: TokenClaims): string {
  const payload: Record<string, unknown> = { ...claims.extra };
  if (claims.email) payload.email = claims.email;
  if (claims.name) payload.name = claims.name;
  return jwt.sign(payload, secret, {
    algorithm: 'HS256',
    keyid: secretKeyId(secret),
    subject: claims.sub,
    expiresIn: claims.ttlSeconds ?? 3600,
    ...(claims.issuer && { issuer: claims.issuer }),
    ...(claims.audience && { audience: claims.audience }),
  });
}
