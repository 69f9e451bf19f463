/**
 * What a client's registered `jwks` may hold (RFC 7591 section 2: "the Client's public keys"):
 * public RSA, EC or OKP keys only, RSA of at least 2048 bits (docs/decisions.md, private_key_jwt).
 * A private or symmetric key used to be stored (in clear, and echoed by dynamic registration) and
 * then broke the client at every endpoint (oidc-provider refuses the whole key set): it is refused
 * at the field instead, as is a key nothing could verify with.
 */
import { X509Certificate, createPublicKey } from 'node:crypto';
import type { FieldError } from '../errors.js';

const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];
const MIN_RSA_BITS = 2048;
/** One key's JSON: an RSA-4096 key with a few certificates in `x5c` stays well below it. */
const MAX_KEY_CHARS = 16 * 1024;
/** The algorithms (JWA) a key of each type can serve: signatures, and key agreement or transport. */
const ALGS_OF: Record<string, RegExp> = {
  RSA: /^(?:RS|PS)(?:256|384|512)$|^RSA-OAEP(?:-256|-384|-512)?$|^RSA1_5$/,
  EC: /^ES(?:256|384|512|256K)$|^ECDH-ES(?:\+A(?:128|192|256)KW)?$/,
  OKP: /^(?:EdDSA|Ed25519|Ed448)$|^ECDH-ES(?:\+A(?:128|192|256)KW)?$/,
};

function keyProblem(jwk: Record<string, unknown>): string | undefined {
  const secret = PRIVATE_MEMBERS.filter((m) => m in jwk);
  if (secret.length) return `holds private or secret key material (${secret.join(', ')}): register public keys only`;
  if (jwk.kty !== 'RSA' && jwk.kty !== 'EC' && jwk.kty !== 'OKP') return 'kty must be RSA, EC or OKP (a public key)';
  if (JSON.stringify(jwk).length > MAX_KEY_CHARS) return `is larger than ${MAX_KEY_CHARS} characters`;
  if (jwk.use !== undefined && jwk.use !== 'sig' && jwk.use !== 'enc') return 'use must be sig or enc';
  if (jwk.alg !== undefined && (typeof jwk.alg !== 'string' || !ALGS_OF[jwk.kty]!.test(jwk.alg))) return `alg ${String(jwk.alg).slice(0, 40)} does not fit key type ${jwk.kty}`;
  if (jwk.x5c !== undefined && !certificatesOk(jwk.x5c)) return 'x5c must be a list of base64 DER certificates';
  let bits: number | undefined;
  try {
    bits = createPublicKey({ key: jwk as never, format: 'jwk' }).asymmetricKeyDetails?.modulusLength;
  } catch {
    return 'is not a valid public key';
  }
  if (jwk.kty === 'RSA' && (bits ?? 0) < MIN_RSA_BITS) return `RSA keys need at least ${MIN_RSA_BITS} bits`;
  return undefined;
}

function certificatesOk(x5c: unknown): boolean {
  if (!Array.isArray(x5c) || x5c.length === 0 || x5c.length > 10) return false;
  return x5c.every((c) => {
    if (typeof c !== 'string') return false;
    try {
      new X509Certificate(Buffer.from(c, 'base64'));
      return true;
    } catch {
      return false;
    }
  });
}

/** A key that can verify a client assertion (RFC 7523): not for encryption only, with a signature algorithm when it names one. */
export function canVerifySignatures(jwk: Record<string, unknown>): boolean {
  if (jwk.use !== undefined && jwk.use !== 'sig') return false;
  return jwk.alg === undefined || (typeof jwk.alg === 'string' && !/^(?:RSA|ECDH)/.test(jwk.alg));
}

/** One error per unusable key, named `jwks.keys.<i>`. */
export function jwksProblems(jwks: { keys: ReadonlyArray<Record<string, unknown>> }): FieldError[] {
  const errors: FieldError[] = [];
  jwks.keys.forEach((jwk, i) => {
    const problem = keyProblem(jwk);
    if (problem) errors.push({ field: `jwks.keys.${i}`, message: problem });
  });
  return errors;
}
