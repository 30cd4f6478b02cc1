// CIDRs a client sends: a network address with its prefix. `10.1.2.3/24` has host bits set, which
// PostgreSQL's `cidr` refuses with a bare "malformed"; here it is refused naming the network meant.
import Joi from 'joi';
import { isNetworkCidr, networkOf } from '../core/ip.js';

export { isNetworkCidr, networkOf };

/** A CIDR body field: IPv4 or IPv6 with a prefix, and no host bits ("did you mean 10.1.2.0/24?"). */
export const networkCidr = () => Joi.string().ip({ version: ['ipv4', 'ipv6'], cidr: 'required' }).custom((value: string, helpers) => {
  if (isNetworkCidr(value)) return value;
  return helpers.message({ custom: `'${helpers.state.path?.join('.') || 'cidr'}' ${value} has host bits set: did you mean ${networkOf(value)}?` });
});
