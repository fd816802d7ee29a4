import { OPERATION_METHOD, type OperationName } from './define.js';
import type { FieldMetadata, Registry, ResourceMetadata } from './registry.js';

/**
 * The Hydra API documentation (`/api/docs.jsonld`) in API Platform 3.x's shape: an inline context,
 * one `hydra:Class` per resource carrying its item operations, and an `#Entrypoint` class whose
 * properties carry the collection operations. `@api-platform/api-doc-parser` and the admin build
 * their whole model from this document, so it follows what that parser reads: expanded IRIs under
 * `@vocab` (= docs URL + `#`, exactly as the Link header names it), `owl:equivalentClass` on the
 * entrypoint properties, `hydra:Link` plus a class range for references, and a title and
 * `returns` on every operation (the parser throws without them).
 */

type Json = Record<string, unknown>;

/** Operation titles as API Platform 3.x writes them; people and tools recognise the sentences. */
const SENTENCES: Readonly<Record<OperationName, (shortName: string) => string>> = {
  getCollection: (s) => `Retrieves the collection of ${s} resources.`,
  get: (s) => `Retrieves a ${s} resource.`,
  post: (s) => `Creates a ${s} resource.`,
  put: (s) => `Replaces the ${s} resource.`,
  patch: (s) => `Updates the ${s} resource.`,
  delete: (s) => `Deletes the ${s} resource.`,
};

/** schema.org action types of 3.x; PATCH has none there and stays a plain hydra:Operation. */
const ACTION_TYPES: Readonly<Record<OperationName, string | undefined>> = {
  getCollection: 'schema:FindAction',
  get: 'schema:FindAction',
  post: 'schema:CreateAction',
  put: 'schema:ReplaceAction',
  patch: undefined,
  delete: 'schema:DeleteAction',
};

const ITEM_ORDER: readonly OperationName[] = ['get', 'put', 'patch', 'delete'];
const COLLECTION_ORDER: readonly OperationName[] = ['getCollection', 'post'];

export function hydraDocumentation(registry: Registry, docsUrl: string): object {
  const classes: Json[] = registry.resources.map((resource) => resourceClass(resource));
  classes.push(entrypointClass(registry), constraintViolationClass(), constraintViolationListClass());

  const doc: Json = {
    '@context': {
      '@vocab': `${docsUrl}#`,
      hydra: 'http://www.w3.org/ns/hydra/core#',
      rdf: 'http://www.w3.org/1999/02/22-rdf-syntax-ns#',
      rdfs: 'http://www.w3.org/2000/01/rdf-schema#',
      xmls: 'http://www.w3.org/2001/XMLSchema#',
      owl: 'http://www.w3.org/2002/07/owl#',
      schema: 'https://schema.org/',
      domain: { '@id': 'rdfs:domain', '@type': '@id' },
      range: { '@id': 'rdfs:range', '@type': '@id' },
      subClassOf: { '@id': 'rdfs:subClassOf', '@type': '@id' },
      expects: { '@id': 'hydra:expects', '@type': '@id' },
      returns: { '@id': 'hydra:returns', '@type': '@id' },
    },
    '@id': `${registry.prefix}/docs.jsonld`,
    '@type': 'hydra:ApiDocumentation',
  };
  if (registry.title) doc['hydra:title'] = registry.title;
  if (registry.description) doc['hydra:description'] = registry.description;
  doc['hydra:entrypoint'] = registry.prefix;
  doc['hydra:supportedClass'] = classes;
  return doc;
}

function resourceClass(resource: ResourceMetadata): Json {
  const id = `#${resource.shortName}`;
  const cls: Json = {
    '@id': id,
    '@type': 'hydra:Class',
    'rdfs:label': resource.shortName,
    'hydra:title': resource.shortName,
    'hydra:supportedProperty': resource.fields.filter(isDocumented).map((field) => supportedProperty(resource, field)),
    'hydra:supportedOperation': ITEM_ORDER.filter((name) => resource.operations.has(name)).map((name) =>
      hydraOperation(resource, name),
    ),
  };
  if (resource.description) cls['hydra:description'] = resource.description;
  return cls;
}

/** As API Platform does, the identifier is left out when it cannot be written; so is anything neither read nor written. */
function isDocumented(field: FieldMetadata): boolean {
  return field.kind !== 'id' && (field.readable || field.writable);
}

/**
 * A secret (an API key shown once, in the response that created it) is readable: a client reads
 * it from that response, and api-doc-parser must know it can. Its description says where the
 * value appears; it is never writeable.
 */
function isReadable(field: FieldMetadata): boolean {
  return field.readable;
}

/**
 * Required from the client's point of view: a field the server fills in when it is left out
 * (the caller as manager, role "user") can never fail for being absent, so clients such as the
 * admin must not insist on it in their create forms.
 */
export function mustBeSent(field: FieldMetadata): boolean {
  return field.required && field.default === undefined;
}

function range(field: FieldMetadata): string {
  switch (field.kind) {
    case 'integer':
    case 'id':
      return 'xmls:integer';
    case 'number':
      return 'xmls:decimal';
    case 'boolean':
      return 'xmls:boolean';
    case 'ref':
      return `#${field.target as string}`;
    case 'string':
    case 'enum':
    case 'secret':
      return 'xmls:string';
    case 'object':
    case 'array':
      return 'rdf:JSON';
    case 'datetime':
      return 'xmls:dateTime';
  }
}

/**
 * The range of an enum: `xmls:string` first (what api-doc-parser reads as the field's type), then
 * the datatype of exactly its values, `owl:oneOf` an RDF list, as OWL describes enumerated
 * datatypes; a client that wants to offer a select reads the values from there.
 */
function enumRange(field: FieldMetadata): unknown[] {
  return ['xmls:string', { '@type': 'rdfs:Datatype', 'owl:oneOf': { '@list': [...(field.values ?? [])] } }];
}

/**
 * The property a field stands for: its shared IRI when it has one (schema.org `name` marks the
 * field that names a record, which clients such as the admin show instead of the IRI), else
 * `#Class/field`. The resource contexts map each field to the same IRI, so items and
 * documentation expand alike.
 */
export function propertyIri(resource: ResourceMetadata, field: FieldMetadata): string {
  return field.iri ?? `#${resource.shortName}/${field.name}`;
}

function supportedProperty(resource: ResourceMetadata, field: FieldMetadata): Json {
  const isLink = field.kind === 'ref';
  // The property @id is `#Class/field` unless the field names a shared IRI (see propertyIri);
  // the resource contexts map fields to the same IRIs, so documentation and items agree.
  const property: Json = {
    '@id': propertyIri(resource, field),
    '@type': isLink ? 'hydra:Link' : 'rdf:Property',
    'rdfs:label': field.name,
    domain: `#${resource.shortName}`,
  };
  if (isLink) property['owl:maxCardinality'] = 1;
  property.range = field.kind === 'enum' ? enumRange(field) : range(field);

  const supported: Json = {
    '@type': 'hydra:SupportedProperty',
    'hydra:property': property,
    'hydra:title': field.name,
    'hydra:required': mustBeSent(field),
    'hydra:readable': isReadable(field),
    'hydra:writeable': field.writable,
  };
  const description = field.description ?? (field.kind === 'secret' ? secretNote(field) : undefined);
  if (description) supported['hydra:description'] = description;
  return supported;
}

function secretNote(field: FieldMetadata): string {
  return `Returned only in the response to ${(field.readOn ?? []).map((op) => OPERATION_METHOD[op]).join(', ')}.`;
}

/** Keys in the order API Platform writes them (it sorts the operation's keys). */
function hydraOperation(resource: ResourceMetadata, name: OperationName): Json {
  const id = `#${resource.shortName}`;
  const action = ACTION_TYPES[name];
  const title = SENTENCES[name](resource.shortName);
  const description = resource.operations.get(name)?.description;
  const operation: Json = { '@type': action ? ['hydra:Operation', action] : 'hydra:Operation' };
  if (name === 'post' || name === 'put' || name === 'patch') operation.expects = id;
  if (description) operation['hydra:description'] = description;
  operation['hydra:method'] = OPERATION_METHOD[name];
  operation['hydra:title'] = title;
  operation['rdfs:label'] = title;
  operation.returns = name === 'getCollection' ? 'hydra:Collection' : name === 'delete' ? 'owl:Nothing' : id;
  return operation;
}

function entrypointClass(registry: Registry): Json {
  const properties = registry.resources
    .filter((r) => r.hasCollectionOperations)
    .map((resource) => {
      const label = `The collection of ${resource.shortName} resources`;
      return {
        '@type': 'hydra:SupportedProperty',
        'hydra:property': {
          '@id': `#Entrypoint/${resource.entrypointKey}`,
          '@type': 'hydra:Link',
          domain: '#Entrypoint',
          'rdfs:label': label,
          'rdfs:range': [
            { '@id': 'hydra:Collection' },
            {
              'owl:equivalentClass': {
                'owl:onProperty': { '@id': 'hydra:member' },
                'owl:allValuesFrom': { '@id': `#${resource.shortName}` },
              },
            },
          ],
          'hydra:supportedOperation': COLLECTION_ORDER.filter((name) => resource.operations.has(name)).map((name) =>
            hydraOperation(resource, name),
          ),
        },
        'hydra:title': label,
        'hydra:readable': true,
        'hydra:writeable': false,
      };
    });
  return {
    '@id': '#Entrypoint',
    '@type': 'hydra:Class',
    'hydra:title': 'The API entrypoint',
    'hydra:supportedProperty': properties,
    // API Platform 3.x points `returns` at "#EntryPoint" (capital P), a class that does not exist;
    // we name the class we do define. It also gives only rdfs:label: a title is added because
    // generic Hydra clients, like api-doc-parser for the other operations, insist on one.
    'hydra:supportedOperation': {
      '@type': 'hydra:Operation',
      'hydra:method': 'GET',
      'hydra:title': 'The API entrypoint.',
      'rdfs:label': 'The API entrypoint.',
      returns: '#Entrypoint',
    },
  };
}

function plainProperty(domain: string, name: string, range: string, description: string): Json {
  return {
    '@type': 'hydra:SupportedProperty',
    'hydra:property': {
      '@id': `#${domain}/${name}`,
      '@type': 'rdf:Property',
      'rdfs:label': name,
      domain: `#${domain}`,
      range,
    },
    'hydra:title': name,
    'hydra:description': description,
    'hydra:readable': true,
    'hydra:writeable': false,
  };
}

/** `code` is not in API Platform's list, but every violation the engine reports carries one. */
function constraintViolationClass(): Json {
  return {
    '@id': '#ConstraintViolation',
    '@type': 'hydra:Class',
    'hydra:title': 'A constraint violation',
    'hydra:supportedProperty': [
      plainProperty('ConstraintViolation', 'propertyPath', 'xmls:string', 'The property path of the violation'),
      plainProperty('ConstraintViolation', 'message', 'xmls:string', 'The message associated with the violation'),
      plainProperty(
        'ConstraintViolation',
        'code',
        'xmls:string',
        'The code of the violated constraint (a Symfony constraint UUID)',
      ),
    ],
  };
}

function constraintViolationListClass(): Json {
  return {
    '@id': '#ConstraintViolationList',
    '@type': 'hydra:Class',
    subClassOf: 'hydra:Error',
    'hydra:title': 'A constraint violation list',
    'hydra:supportedProperty': [
      plainProperty('ConstraintViolationList', 'violations', '#ConstraintViolation', 'The violations'),
    ],
  };
}
