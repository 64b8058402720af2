// YAML request bodies for the built-in frameworks' submission routes: taken as text and parsed
// with the document they hold (a job, an experiment), whose parser names the line of an error.

import type { FastifyInstance } from 'fastify';

const YAML_TYPES = ['application/yaml', 'text/yaml', 'application/x-yaml', 'text/x-yaml'];

/** Registers the YAML content types on `scope` (an encapsulated plugin: only its routes take them). */
export function acceptYamlBodies(scope: FastifyInstance, bodyLimit: number): void {
  scope.addContentTypeParser(YAML_TYPES, { parseAs: 'string', bodyLimit }, (_req, body, done) => done(null, body));
}
