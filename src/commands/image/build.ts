import { Flags } from '@oclif/core';
import { PlbCommand } from '../../cli/plb-command.js';
import { OFFLINE_IMAGE } from '../../cluster/docker/image-names.js';

export default class ImageBuild extends PlbCommand {
  static override description =
    'Build the offline PostgreSQL 15 image (debootstrap Debian bookworm + docker import); needs root';

  static override examples = [
    '<%= config.bin %> image build',
    '<%= config.bin %> image build --force',
    'PLB_DEBIAN_MIRROR=http://mirror.example/debian <%= config.bin %> image build',
  ];

  static override flags = {
    name: Flags.string({ description: 'image name', default: OFFLINE_IMAGE }),
    force: Flags.boolean({ description: 'rebuild even when the image is present', default: false }),
    verbose: Flags.boolean({ description: "show debootstrap's per-package lines", default: false }),
  };

  async run(): Promise<{ name: string; built: boolean; seconds: number }> {
    const { flags } = await this.parse(ImageBuild);
    // dockerode loads here, not with the command list (oclif imports every command without a manifest).
    const { buildImage } = await import('../../cluster/docker/image.js');
    const r = await buildImage({
      name: flags.name,
      force: flags.force,
      verbose: flags.verbose,
      log: (line) => this.log(line),
    });
    this.log(
      r.built
        ? `built ${r.name} in ${r.seconds.toFixed(0)} s`
        : `${r.name} is already present (use --force to rebuild)`,
    );
    return { name: r.name, built: r.built, seconds: r.seconds };
  }
}
