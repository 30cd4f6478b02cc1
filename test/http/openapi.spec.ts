// The OpenAPI document is what client generators read (issue 14.1): valid by a real OpenAPI
// validator, an operationId on every operation, named component schemas referenced where they
// appear, required response fields, closed enums and both IP families. That it matches the
// answers themselves is checked on every call of every test (test/support/contract.ts).
import SwaggerParser from '@apidevtools/swagger-parser';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { expect } from 'chai';
import { startTestApp, type TestApp } from '../support/app.js';
import { call } from '../support/client.js';

type Json = Record<string, any>;

describe('the OpenAPI document', () => {
  let app: TestApp;
  let doc: Json;
  before(async () => {
    app = await startTestApp();
    doc = (await call(app.url, 'GET', '/api/openapi.json')).body;
  });
  after(() => app.close());
  const operations = () => Object.entries(doc.paths as Json).flatMap(([path, ops]) => Object.entries(ops as Json).map(([method, op]) => ({ path, method, op: op as Json })));
  const dataOf = (op: Json, status = '200') => op.responses[status].content['application/json'].schema.properties.data;

  it('passes an OpenAPI 3.1 validator', async () => {
    await SwaggerParser.validate(structuredClone(doc) as never);
  });

  it('names every operation once, in camelCase', () => {
    const ids = operations().map(({ op }) => op.operationId);
    expect(ids.every((id) => /^[a-z][A-Za-z]+$/.test(id)), ids.filter((id) => !/^[a-z][A-Za-z]+$/.test(id)).join()).to.equal(true);
    expect(new Set(ids).size).to.equal(ids.length);
    expect(doc.paths['/api/v1/hosts/{id}'].put.operationId).to.equal('updateHost');
    expect(doc.paths['/api/v1/tags'].get.operationId).to.equal('listTags');
  });

  it('references named schemas for the resources, with their fields required and their enums closed', () => {
    const schemas = doc.components.schemas as Json;
    for (const name of ['Host', 'Port', 'Service', 'Binding', 'Dependency', 'Tag', 'Daemon', 'VersionStatus', 'Error', 'Subnet', 'IPAddress', 'Interface', 'Network']) {
      expect(schemas, name).to.have.property(name);
    }
    expect(dataOf(doc.paths['/api/v1/hosts/{id}'].get)).to.deep.equal({ $ref: '#/components/schemas/Host' });
    expect(dataOf(doc.paths['/api/v1/hosts'].get).items).to.deep.equal({ $ref: '#/components/schemas/Host' });
    expect(schemas.Host.properties.ports.items).to.deep.equal({ $ref: '#/components/schemas/Port' });
    expect(schemas.Service.properties.bindings.items).to.deep.equal({ $ref: '#/components/schemas/Binding' });
    expect(schemas.Host.required).to.include.members(['id', 'name', 'network_id', 'tags', 'source', 'created_at', 'updated_at', 'virtualization']);
    // null only where it is sent: updated_at never, valid_to always may be.
    expect(schemas.Tag.properties.updated_at.type).to.equal('string');
    expect(schemas.Tag.properties.valid_to.type).to.deep.equal(['string', 'null']);
    expect(schemas.Port.properties.protocol.enum).to.deep.equal(['Tcp', 'Udp']);
    expect(schemas.Binding.properties.type.enum).to.deep.equal(['Port', 'IPAddress']);
    expect(schemas.Dependency.properties.edge_style.enum).to.deep.equal(['Straight', 'SmoothStep', 'Bezier']);
    expect(schemas.Tag.properties.color.enum).to.include('Blue');
    // Real shapes, not empty objects.
    expect(schemas.EntitySource.properties.type.enum).to.include.members(['Manual', 'Discovery']);
    expect(schemas.Virtualization.properties).to.have.property('details');
    expect(schemas.InterfaceNeighbor.properties).to.have.property('interface_id');
  });

  it('types every address as IPv4 or IPv6 and every CIDR of either family', () => {
    const address = doc.components.schemas.IPAddress.properties.ip_address;
    expect(address.oneOf).to.deep.equal([{ format: 'ipv4' }, { format: 'ipv6' }]);
    const cidr = new RegExp(doc.components.schemas.Subnet.properties.cidr.pattern);
    expect(cidr.test('10.0.0.0/8') && cidr.test('2001:db8::/32')).to.equal(true);
    expect(cidr.test('10.0.0.1')).to.equal(false);
    const body = doc.paths['/api/v1/subnets'].post.requestBody.content['application/json'].schema;
    expect(body.properties.cidr.pattern).to.equal(doc.components.schemas.Subnet.properties.cidr.pattern);
  });

  it('lists the error answers of each operation with their codes', () => {
    const update = doc.paths['/api/v1/hosts/{id}'].put.responses;
    expect(Object.keys(update)).to.include.members(['200', '400', '401', '403', '404', '409', '429']);
    const resolve = (r: Json) => doc.components.responses[r.$ref.split('/').pop()];
    expect(resolve(update['409']).description).to.include('entity_modified');
    expect(resolve(update['404']).content['application/json'].schema).to.deep.equal({ $ref: '#/components/schemas/Error' });
    expect(Object.keys(doc.paths['/api/health'].get.responses)).to.not.include('401');
  });
  it('gives every request body an example that its own schema accepts, and describes every parameter', () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    (addFormats as unknown as (a: Ajv2020) => void)(ajv);
    const wrong: string[] = [];
    for (const { path, method, op } of operations()) {
      for (const p of op.parameters as Json[]) if (!p.description) wrong.push(`${method} ${path}: parameter ${p.name} undescribed`);
      const media = op.requestBody?.content['application/json'];
      if (!media) continue;
      if (media.example === undefined) { wrong.push(`${method} ${path}: no example`); continue; }
      const validate = ajv.compile({ ...media.schema, components: doc.components });
      if (!validate(media.example)) wrong.push(`${method} ${path}: ${ajv.errorsText(validate.errors)} in ${JSON.stringify(media.example)}`);
    }
    expect(wrong, wrong.join('\n')).to.deep.equal([]);
    const create = doc.paths['/api/v1/hosts'].post.requestBody.content['application/json'].example;
    expect(create).to.include({ name: 'web-01' });
  });
});
