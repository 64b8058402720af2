// `cairn secret create|list|delete`, added to the program by one call from program.ts;
// handlers (commands.ts) are loaded only when one runs.

import { Command, Option } from 'commander';
import { readFileSync } from 'node:fs';
import { clientSide, masterOption } from '../common/client-side.ts';
import { examplesFrom } from '../common/examples.ts';
import type { FamilyContext } from '../common/context.ts';
import type { OutputFormat } from '../common/output.ts';

export interface SecretProgramContext extends FamilyContext {
  /** What --docker-password-stdin reads (the process's stdin; tests give their own). */
  stdin?: () => string;
}

const USAGE = 2;

const SECRET_EXAMPLES: Record<string, readonly string[]> = {
  secret: ['cairn secret create regcred --from-file ~/.docker/config.json', 'cairn secret list', 'cairn secret delete regcred'],
  'secret create': [
    'cairn secret create regcred --from-file ~/.docker/config.json',
    'echo "$PASSWORD" | cairn secret create regcred --docker-server registry.example.com:5000 --docker-username ci --docker-password-stdin',
  ],
  'secret list': ['cairn secret list', 'cairn secret list -o json'],
  'secret delete': ['cairn secret delete regcred'],
};

const withExamples = examplesFrom(SECRET_EXAMPLES);

export function addSecretCommands(program: Command, ctx: SecretProgramContext): void {
  const { result } = ctx;
  const handlers = () => import('./commands.ts');
  const secret = withExamples(program.command('secret'), 'secret')
    .alias('secrets')
    .description("registry credentials stored in the cluster, named by apps' container.docker.pullConfig and jobs' imagePullSecrets (only their owner uses them; never shown)");

  withExamples(secret.command('create'), 'secret create')
    .description('store (or replace one of your own) a Docker registry credential under NAME')
    .argument('<name>', "the secret's name (letters, digits, '.', '_', '-'; parts joined by '/')")
    .option('--from-file <file>', 'a Docker config.json with "auths" (as `docker login` writes it)')
    .option('--docker-server <host>', 'the registry (host or host:port) for --docker-username')
    .option('--docker-username <user>', 'the registry user')
    .option('--docker-password-stdin', 'read the password from stdin (never from a flag: it would show in ps and shell history)')
    .addOption(masterOption())
    .action(async (name: string, o: { master?: string; fromFile?: string; dockerServer?: string; dockerUsername?: string; dockerPasswordStdin?: boolean }, cmd: Command) => {
      const fromFlags = o.dockerServer !== undefined || o.dockerUsername !== undefined || o.dockerPasswordStdin === true;
      if (o.fromFile !== undefined && fromFlags) cmd.error('error: give --from-file or --docker-server/--docker-username/--docker-password-stdin, not both', { exitCode: USAGE, code: 'cairn.badFlag' });
      if (o.fromFile === undefined && !(o.dockerServer && o.dockerUsername && o.dockerPasswordStdin)) {
        cmd.error('error: give --from-file CONFIG.JSON, or all of --docker-server, --docker-username and --docker-password-stdin', { exitCode: USAGE, code: 'cairn.badFlag' });
      }
      const source = o.fromFile !== undefined
        ? { fromFile: o.fromFile }
        : { dockerServer: o.dockerServer!, dockerUsername: o.dockerUsername!, password: (ctx.stdin ?? (() => readFileSync(0, 'utf8')))() };
      const side = clientSide(program, ctx.io);
      result.exitCode = await (await handlers()).runSecretCreate({ masterUrl: ctx.masterUrl(o.master, cmd), ...(side.tls ? { tls: side.tls } : {}), name, source }, side.io);
    });

  withExamples(secret.command('list'), 'secret list')
    .alias('ls')
    .description('the names of the secrets you may use (never their content)')
    .addOption(new Option('-o, --output <format>', 'json or yaml').choices(['json', 'yaml']))
    .addOption(masterOption())
    .action(async (o: { master?: string; output?: OutputFormat }, cmd: Command) => {
      const side = clientSide(program, ctx.io);
      result.exitCode = await (await handlers()).runSecretList({ masterUrl: ctx.masterUrl(o.master, cmd), ...(side.tls ? { tls: side.tls } : {}), ...(o.output ? { output: o.output } : {}) }, side.io);
    });

  withExamples(secret.command('delete'), 'secret delete')
    .alias('rm')
    .description('delete one of your secrets (apps and jobs naming it then fail to launch, saying so)')
    .argument('<name>', "the secret's name")
    .addOption(masterOption())
    .action(async (name: string, o: { master?: string }, cmd: Command) => {
      const side = clientSide(program, ctx.io);
      result.exitCode = await (await handlers()).runSecretDelete({ masterUrl: ctx.masterUrl(o.master, cmd), ...(side.tls ? { tls: side.tls } : {}), name }, side.io);
    });
}
