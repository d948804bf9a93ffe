// oidc-provider ships no types: what the OAuth test peers use of it, loosely.
declare module 'oidc-provider' {
  type Loose = any;
  export default class Provider {
    constructor(issuer: string, configuration: Loose);
    [member: string]: Loose;
  }
  export const errors: { InvalidTarget: new (description?: string) => Error };
}
