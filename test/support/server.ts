import { randomUUID } from 'node:crypto';
import { signToken } from '../../src/auth/sign.ts';
import { createLogger } from '../../src/platform/logger.ts';
import type { AnyRoute } from '../../src/http/route.ts';
import { startWeb, type WebProcess } from '../../src/web.ts';
import { TEST_JWT_SECRET, testConfig } from './config.ts';
import { testDatabase } from './hooks.ts';

export interface ApiResponse<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export interface RequestOptions {
  token?: string | null;
  body?: unknown;
  /** Sent as-is (for malformed JSON tests). */
  rawBody?: string;
  headers?: Record<string, string>;
  query?: Record<string, string | number | boolean | undefined>;
}

export interface TestServer {
  url: string;
  web: WebProcess;
  request<T = any>(method: string, path: string, options?: RequestOptions): Promise<ApiResponse<T>>;
  stop(): Promise<void>;
}

/** The real web process (Koa app, middleware, pg-boss sender) on an ephemeral port. */
export async function startTestServer(
  overrides: Record<string, string> = {},
  options: { extraRoutes?: AnyRoute[]; databaseUrl?: string } = {},
): Promise<TestServer> {
  const config = testConfig(overrides);
  const web = await startWeb(config, options.databaseUrl ?? testDatabase().url, createLogger(config, 'test-web'), { extraRoutes: options.extraRoutes ?? [] });
  const address = web.server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  return { url, web, request: (method, path, options) => request(url, method, path, options), stop: () => web.stop() };
}

export async function request<T = any>(base: string, method: string, path: string, options: RequestOptions = {}): Promise<ApiResponse<T>> {
  const target = new URL(path, base);
  for (const [key, value] of Object.entries(options.query ?? {})) if (value !== undefined) target.searchParams.set(key, String(value));
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  let body: string | undefined = options.rawBody;
  if (options.body !== undefined) body = JSON.stringify(options.body);
  if (body !== undefined) headers['content-type'] ??= 'application/json';
  const response = await fetch(target, { method: method.toUpperCase(), headers, body });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON: leave the text for the assertion to show
  }
  return { status: response.status, body: parsed as T, headers: response.headers };
}

export interface TestUser {
  id: string;
  email: string;
  name: string;
  token: string;
}

/** A fresh identity with a valid token (every test makes its own users: no shared state). */
export function newUser(overrides: Partial<Omit<TestUser, 'token'>> = {}): TestUser {
  const id = overrides.id ?? `user_${randomUUID().slice(0, 8)}`;
  const email = overrides.email ?? `${id}@example.test`;
  const name = overrides.name ?? `User ${id}`;
  return { id, email, name, token: signToken(TEST_JWT_SECRET, { sub: id, email, name, ttlSeconds: 3600 }) };
}
