import jwt from 'jsonwebtoken';

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
    subject: claims.sub,
    expiresIn: claims.ttlSeconds ?? 3600,
    ...(claims.issuer && { issuer: claims.issuer }),
    ...(claims.audience && { audience: claims.audience }),
  });
}
