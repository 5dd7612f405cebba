"""Packaging for `entropic_bound`, read from `settings.ini` (nbdev 2 layout)."""
from configparser import ConfigParser
import setuptools

cfg = ConfigParser(delimiters=['='])
cfg.read('settings.ini', encoding='utf-8')
cfg = cfg['DEFAULT']

licenses = {'apache2': ('Apache Software License 2.0', 'OSI Approved :: Apache Software License')}
statuses = ['1 - Planning', '2 - Pre-Alpha', '3 - Alpha', '4 - Beta', '5 - Production/Stable', '6 - Mature', '7 - Inactive']
py_versions = '3.10 3.11 3.12 3.13'.split()

lic = licenses[cfg['license'].lower()]
min_python = cfg['min_python']
requirements = cfg.get('requirements', '').split()
dev_requirements = cfg.get('dev_requirements', '').split()
models_requirements = cfg.get('models_requirements', '').split()
cluster_requirements = cfg.get('cluster_requirements', '').split()
quant_requirements = cfg.get('quant_requirements', '').split()      # transformers' quantized cache (HQQ backend), a baseline of the keys-in-bits page
console_scripts = cfg.get('console_scripts', '').split()

setuptools.setup(
    name=cfg['lib_name'],
    version=cfg['version'],
    description=cfg['description'],
    long_description=open('README.md', encoding='utf-8').read(),
    long_description_content_type='text/markdown',
    license=lic[0],
    author=cfg['author'],
    author_email=cfg['author_email'],
    keywords=cfg['keywords'].split(),
    classifiers=['Development Status :: ' + statuses[int(cfg['status']) - 1],
                 'Intended Audience :: ' + cfg['audience'].title(),
                 'License :: ' + lic[1],
                 'Natural Language :: ' + cfg['language'].title()]
                + ['Programming Language :: Python :: ' + v for v in py_versions[py_versions.index(min_python):]],
    packages=setuptools.find_packages(include=[cfg['lib_path'], cfg['lib_path'] + '.*']),
    include_package_data=True,
    install_requires=requirements,
    extras_require={'dev': dev_requirements, 'models': models_requirements, 'cluster': cluster_requirements, 'quant': quant_requirements},
    python_requires='>=' + min_python,
    zip_safe=False,
    entry_points={'console_scripts': console_scripts, 'nbdev': [f"{cfg['lib_path']}={cfg['lib_path']}._modidx:d"]},
)
