// A real OpenID Connect issuer for lakegraph's tests: panva's oidc-provider (certified), with the
// clients, users, groups, keys and audiences the test writes to the JSON file named by argv[2].
// Access tokens are JWTs (RFC 9068) for a resource indicator (RFC 8707), carrying `groups`.
import { readFileSync } from 'node:fs';
import Provider, { errors } from 'oidc-provider';

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const clients = new Map(config.clients.map((client) => [client.client_id, client]));
const users = new Map(config.users.map((user) => [user.id, user]));

function groupsOf(token) {
  if (token.accountId && users.has(token.accountId)) return users.get(token.accountId).groups;
  return clients.get(token.clientId)?.groups ?? [];
}

const provider = new Provider(config.issuer, {
  clients: config.clients.map((client) => ({
    client_id: client.client_id,
    ...(client.client_secret ? { client_secret: client.client_secret } : {}),
    grant_types: client.redirect_uri ? ['authorization_code'] : ['client_credentials'],
    response_types: client.redirect_uri ? ['code'] : [],
    redirect_uris: client.redirect_uri ? [client.redirect_uri] : [],
    token_endpoint_auth_method: client.client_secret ? 'client_secret_basic' : 'none',
    scope: ['openid', ...config.scopes].join(' '),
  })),
  jwks: { keys: config.keys },
  cookies: { keys: ['lakegraph-test-issuer'] },
  scopes: ['openid', ...config.scopes],
  pkce: { required: () => true },
  features: {
    clientCredentials: { enabled: true },
    devInteractions: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => config.audiences[0],
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, resource, client) => {
        if (!config.audiences.includes(resource)) throw new errors.InvalidTarget();
        return {
          scope: config.scopes.join(' '),
          audience: resource,
          accessTokenTTL: clients.get(client.clientId)?.ttl ?? 600,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        };
      },
    },
  },
  extraTokenClaims: (ctx, token) => ({ groups: groupsOf(token) }),
  findAccount: (ctx, id) => (users.has(id) ? { accountId: id, claims: () => ({ sub: id, groups: users.get(id).groups }) } : undefined),
  async loadExistingGrant(ctx) {
    // Consent is given by the test's configuration: a user's grant covers the scopes it asks for.
    const { Grant } = ctx.oidc.provider;
    const grant = new Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
    grant.addOIDCScope(['openid', ...config.scopes].join(' '));
    for (const audience of config.audiences) grant.addResourceScope(audience, config.scopes.join(' '));
    await grant.save();
    return grant;
  },
});
provider.proxy = false;
const server = provider.listen(config.port, '127.0.0.1', () => console.log(`issuer ready at ${config.issuer}`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
